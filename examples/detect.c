/* Detects objects in a photo with a detector plan (kiln build yolov10 ...) through kiln's C API:
 *   detect_c PLAN PHOTO [MIN_SCORE]
 * One line per box, best first: class name, score, then the corners x1 y1 x2 y2 in the photo's pixels. */
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>

#include "read_file.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: detect_c PLAN PHOTO [MIN_SCORE]\n");
    return 2;
  }
  const kiln_api* kiln = NULL;
  if (kiln_get_api(KILN_ABI_MAJOR, KILN_ABI_MINOR, &kiln) != KILN_OK) return 1;

  size_t size = 0;
  unsigned char* photo = read_file(argv[2], &size);
  if (photo == NULL) {
    fprintf(stderr, "cannot read %s\n", argv[2]);
    return 1;
  }
  const float min_score = argc == 4 ? strtof(argv[3], NULL) : 0.25f;
  const kiln_detect_options detect = {sizeof(kiln_detect_options), min_score};
  kiln_engine_options options = {sizeof(kiln_engine_options), "cpu-reference", 0, 1, 0, 0, NULL};
  kiln_error* error = NULL;
  kiln_plan* plan = NULL;
  kiln_detector* detector = NULL;
  kiln_detections* boxes = NULL;
  if (kiln->plan_load_file(argv[1], &plan, &error) == KILN_OK &&
      kiln->detector_create_from_plan(plan, &options, &detector, &error) == KILN_OK &&
      kiln->detect_encoded(detector, photo, size, &detect, &boxes, &error) == KILN_OK) {
    for (size_t i = 0; i < kiln->detections_count(boxes); ++i) {
      const kiln_detection* d = kiln->detections_at(boxes, i);
      printf("%s %.6f %.3f %.3f %.3f %.3f\n", d->class_name, d->score, d->x1, d->y1, d->x2, d->y2);
    }
  }
  int status = 0;
  if (error != NULL) {
    fprintf(stderr, "kiln: error: %s\n", kiln->error_message(error));
    kiln->error_free(error);
    status = 1;
  }
  kiln->detections_free(boxes);
  kiln->detector_free(detector);
  kiln->plan_free(plan);
  free(photo);
  return status;
}
