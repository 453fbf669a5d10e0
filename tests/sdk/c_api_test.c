/* The C API from C, with kiln.h alone: results equal Engine's (make_fixture's files), and errors come
 * back as status codes with kiln's one-line message.
 *   c_api_test FIXTURE_DIR PHOTO */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_test_support.h"

static void test_versions(void) {
  const kiln_api* table = NULL;
  CHECK(kiln_get_api(KILN_ABI_MAJOR + 1, 0, &table) == KILN_STATUS_UNSUPPORTED && table == NULL);
  CHECK(kiln_get_api(KILN_ABI_MAJOR, KILN_ABI_MINOR + 1, &table) == KILN_STATUS_UNSUPPORTED);
  CHECK(kiln_get_api(KILN_ABI_MAJOR, KILN_ABI_MINOR, &api) == KILN_OK && api != NULL);
  CHECK(api->struct_size >= sizeof(kiln_api));
  CHECK(strlen(api->version()) > 0);
  CHECK(strcmp(kiln_status_name(KILN_STATUS_NOT_FOUND), "KILN_STATUS_NOT_FOUND") == 0);
}

/* ABI 1.4: the backends offered here, with a line each; cuda's says whether its plugin loads. */
static void test_backends(void) {
  size_t count = 0;
  int reference = 0;
  while (api->backend_at(count) != NULL) {
    const char* name = api->backend_at(count++);
    reference |= strcmp(name, "cpu-reference") == 0;
    CHECK(api->backend_status(name) != NULL && strlen(api->backend_status(name)) > 0);
  }
  CHECK(count >= 1 && reference);
  CHECK(strcmp(api->backend_status("cpu-reference"), "built in") == 0);
  CHECK(api->backend_status("no-such-backend") == NULL && api->backend_status(NULL) == NULL);
  /* cuda is known whether or not its plugin is installed: the line says which. */
  const char* cuda = api->backend_status("cuda");
  CHECK(cuda != NULL && (strncmp(cuda, "loaded from ", 12) == 0 || strstr(cuda, "the cuda backend") != NULL));
  CHECK(api->backend_status("cuda") == cuda); /* read once, the same line after */
}

static void test_plan_errors(void) {
  kiln_plan* plan = NULL;
  kiln_error* error = NULL;
  expect_error(api->plan_load_file("/nonexistent/model.kplan", &plan, &error), &error, KILN_STATUS_NOT_FOUND,
               "/nonexistent/model.kplan");
  CHECK(plan == NULL);
  const char junk[] = "not a plan at all";
  expect_error(api->plan_load_memory(junk, sizeof junk, "junk.kplan", &plan, &error), &error,
               KILN_STATUS_FAILED, "junk.kplan");
  CHECK(api->plan_load_file(NULL, &plan, NULL) == KILN_STATUS_INVALID_ARGUMENT); /* no error object asked */
}

static kiln_engine* make_engine(const kiln_plan* plan, const char* backend) {
  kiln_engine_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.backend = backend;
  options.batch = 2;
  kiln_engine* engine = NULL;
  kiln_error* error = NULL;
  if (api->engine_create(plan, &options, &engine, &error) != KILN_OK) {
    fprintf(stderr, "engine on %s: %s\n", backend, api->error_message(error));
    exit(1);
  }
  return engine;
}

/* Runs the fixture's input on `backend` and compares with Engine's logits from the same backend. */
static void test_run(const kiln_plan* plan, const char* backend) {
  char name[256];
  snprintf(name, sizeof name, "logits_%s.f32", backend);
  size_t expected_size = 0, input_size = 0;
  float* expected = read_fixture(name, &expected_size);
  float* input = read_fixture("input.f32", &input_size);
  kiln_engine* engine = make_engine(plan, backend);
  CHECK(strcmp(api->engine_backend(engine), backend) == 0);
  CHECK(api->engine_input_count(engine) == 1 && api->engine_output_count(engine) == 1);
  kiln_tensor_info in_info, out_info;
  CHECK(api->engine_input_info(engine, 0, &in_info, NULL) == KILN_OK);
  CHECK(api->engine_output_info(engine, 0, &out_info, NULL) == KILN_OK);
  CHECK(in_info.rank == 4 && in_info.shape[0] == 2 && in_info.shape[1] == 3 && in_info.shape[2] == 224);
  CHECK(out_info.rank == 2 && out_info.shape[0] == 2 && out_info.shape[1] == 10);
  CHECK(out_info.dtype == KILN_DTYPE_F32 && strlen(out_info.name) > 0);

  kiln_context* context = NULL;
  CHECK(api->context_create(engine, &context, NULL) == KILN_OK);
  float logits[20];
  kiln_tensor in = {input, input_size, KILN_DTYPE_F32, in_info.rank, in_info.shape};
  kiln_tensor out = {logits, sizeof logits, KILN_DTYPE_F32, out_info.rank, out_info.shape};
  CHECK(expected_size == sizeof logits);
  CHECK(api->context_run(context, &in, 1, &out, 1, NULL) == KILN_OK);
  for (int i = 0; i < 20; ++i) CHECK(logits[i] == expected[i]);

  kiln_error* error = NULL;
  const int64_t wrong_shape[4] = {2, 3, 200, 224};
  kiln_tensor bad = {input, input_size, KILN_DTYPE_F32, 4, wrong_shape};
  expect_error(api->context_run(context, &bad, 1, &out, 1, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "expected shape [2, 3, 224, 224], got [2, 3, 200, 224]");
  kiln_tensor small = out;
  small.size_bytes = 8;
  expect_error(api->context_run(context, &in, 1, &small, 1, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "the buffer holds 8 bytes");
  expect_error(api->context_run(context, &in, 1, &out, 0, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "expected 1 output, got 0");
  expect_error(api->context_run_device(context, &in, 1, &out, 1, NULL, &error), &error,
               KILN_STATUS_UNSUPPORTED, "need a cuda engine");
  api->context_free(context);
  api->engine_free(engine);
  free(expected);
  free(input);
}

/* The photo, encoded and as BGR pixels, ranks as Engine ranked it (make_fixture's dog_top5.txt). */
static void test_classify(const kiln_plan* plan, const char* photo) {
  size_t size = 0;
  char* top5 = read_fixture("dog_top5.txt", &size);
  long expected_index = strtol(top5, NULL, 10);
  kiln_engine* engine = make_engine(plan, NULL);
  kiln_context* context = NULL;
  CHECK(api->context_create(engine, &context, NULL) == KILN_OK);

  FILE* file = fopen(photo, "rb");
  CHECK(file != NULL);
  static unsigned char encoded[1 << 22];
  const size_t encoded_size = fread(encoded, 1, sizeof encoded, file);
  fclose(file);
  kiln_classifications* result = NULL;
  kiln_classify_options options = {sizeof(kiln_classify_options), 3};
  CHECK(api->classify_encoded(context, encoded, encoded_size, &options, &result, NULL) == KILN_OK);
  CHECK(api->classifications_count(result) == 3);
  const kiln_class_score* best = api->classifications_at(result, 0);
  CHECK(best->class_index == expected_index);
  CHECK(strstr(top5, best->label) != NULL);
  CHECK(api->classifications_at(result, 3) == NULL);
  const double best_probability = best->probability;
  api->classifications_free(result);

  size_t rgb_size = 0, dims_size = 0;
  unsigned char* rgb = read_fixture("dog.rgb", &rgb_size);
  char* dims = read_fixture("dog.size", &dims_size);
  char* rest = NULL;
  const long width = strtol(dims, &rest, 10), height = strtol(rest, NULL, 10);
  for (size_t i = 0; i + 2 < rgb_size; i += 3) { /* to BGR */
    const unsigned char red = rgb[i];
    rgb[i] = rgb[i + 2];
    rgb[i + 2] = red;
  }
  kiln_image image = {sizeof(kiln_image), rgb, width, height, 0, KILN_PIXELS_BGR8};
  CHECK(api->classify_pixels(context, &image, NULL, &result, NULL) == KILN_OK);
  CHECK(api->classifications_count(result) == 5);
  CHECK(api->classifications_at(result, 0)->class_index == expected_index);
  CHECK(fabs(api->classifications_at(result, 0)->probability - best_probability) < 1e-12);
  api->classifications_free(result);

  kiln_error* error = NULL;
  image.row_stride = 5;
  expect_error(api->classify_pixels(context, &image, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "row stride");
  expect_error(api->classify_encoded(context, "GIF89a", 6, NULL, &result, &error), &error, KILN_STATUS_FAILED,
               "image");
  api->context_free(context);
  api->engine_free(engine);
  free(rgb);
  free(dims);
  free(top5);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: c_api_test FIXTURE_DIR PHOTO\n");
    return 2;
  }
  fixture = argv[1];
  test_versions();
  if (api == NULL) return 1;
  test_backends();
  test_plan_errors();
  kiln_plan* plan = NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/plan.kplan", fixture);
  kiln_error* error = NULL;
  if (api->plan_load_file(path, &plan, &error) != KILN_OK) {
    fprintf(stderr, "%s\n", api->error_message(error));
    return 1;
  }
  CHECK(strcmp(api->plan_family(plan), "timm_resnest") == 0);
  test_run(plan, "cpu-reference");
  kiln_engine_options probe = {sizeof(kiln_engine_options), "cpu", 0, 2, 0, 0, NULL};
  kiln_engine* cpu = NULL;
  if (api->engine_create(plan, &probe, &cpu, NULL) == KILN_OK) { /* oneDNN is optional */
    api->engine_free(cpu);
    test_run(plan, "cpu");
  }
  expect_error(
      api->engine_create(plan, &(kiln_engine_options){sizeof(kiln_engine_options), "tpu", 0, 0, 0, 0, NULL},
                         &cpu, &error),
      &error, KILN_STATUS_UNSUPPORTED, "unknown backend 'tpu'");
  test_classify(plan, argv[2]);
  api->plan_free(plan);
  if (failures > 0) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures == 0 ? 0 : 1;
}
