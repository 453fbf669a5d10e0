/* Classifies a photo with a plan through kiln's C API: classify_c PLAN PHOTO */
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>

#include "read_file.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: classify_c PLAN PHOTO\n");
    return 2;
  }
  const kiln_api* kiln = NULL;
  if (kiln_get_api(KILN_ABI_MAJOR, KILN_ABI_MINOR, &kiln) != KILN_OK) return 1;

  kiln_error* error = NULL;
  kiln_plan* plan = NULL;
  kiln_engine* engine = NULL;
  kiln_context* context = NULL;
  kiln_classifications* top = NULL;
  size_t size = 0;
  unsigned char* photo = read_file(argv[2], &size);
  if (photo == NULL) {
    fprintf(stderr, "cannot read %s\n", argv[2]);
    return 1;
  }
  kiln_engine_options options = {sizeof(kiln_engine_options), "cpu-reference", 0, 1, 0, 0, NULL};
  if (kiln->plan_load_file(argv[1], &plan, &error) == KILN_OK &&
      kiln->engine_create(plan, &options, &engine, &error) == KILN_OK &&
      kiln->context_create(engine, &context, &error) == KILN_OK &&
      kiln->classify_encoded(context, photo, size, NULL, &top, &error) == KILN_OK) {
    for (size_t i = 0; i < kiln->classifications_count(top); ++i) {
      const kiln_class_score* score = kiln->classifications_at(top, i);
      printf("%zu. %6.2f%%  %s (%lld)\n", i + 1, score->probability * 100.0, score->label,
             (long long)score->class_index);
    }
  }
  int status = 0;
  if (error != NULL) {
    fprintf(stderr, "kiln: error: %s\n", kiln->error_message(error));
    kiln->error_free(error);
    status = 1;
  }
  kiln->classifications_free(top);
  kiln->context_free(context);
  kiln->engine_free(engine);
  kiln->plan_free(plan);
  free(photo);
  return status;
}
