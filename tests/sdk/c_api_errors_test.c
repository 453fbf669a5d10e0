/* Every C API call's error paths, from C with kiln.h alone: NULL handles and out-pointers, struct sizes,
 * buffers of the wrong size, shape or dtype, a device run on a host engine, a plan of the wrong kind.
 * Each must return its documented status with a one-line message naming what was wrong, never crash.
 *   c_api_errors_test FIXTURE_DIR DATA_DIR */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_test_support.h"

static const char* data_dir;
static kiln_error* error = NULL;

static kiln_plan* load_fixture_plan(const char* name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", fixture, name);
  kiln_plan* plan = NULL;
  if (api->plan_load_file(path, &plan, &error) != KILN_OK) {
    fprintf(stderr, "%s\n", api->error_message(error));
    exit(1);
  }
  return plan;
}

static kiln_engine_options engine_options(const char* backend) {
  kiln_engine_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.backend = backend;
  return options;
}

static void test_entry_points(void) {
  const kiln_api* table = NULL;
  CHECK(kiln_get_api(KILN_ABI_MAJOR, KILN_ABI_MINOR, NULL) == KILN_STATUS_INVALID_ARGUMENT);
  CHECK(kiln_get_api(KILN_ABI_MAJOR - 1, 0, &table) == KILN_STATUS_UNSUPPORTED && table == NULL);
  CHECK(kiln_get_api(KILN_ABI_MAJOR, KILN_ABI_MINOR + 1, &table) == KILN_STATUS_UNSUPPORTED && table == NULL);
  CHECK(strcmp(kiln_status_name((kiln_status)99), "KILN_STATUS_UNKNOWN") == 0);
  CHECK(api->error_status(NULL) == KILN_OK);
  CHECK(strcmp(api->error_message(NULL), "") == 0);
  api->error_free(NULL);
}

static void test_plans(void) {
  kiln_plan* plan = (kiln_plan*)&error; /* must be cleared on failure */
  expect_error(api->plan_load_file(NULL, &plan, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "path is NULL");
  CHECK(plan == NULL);
  expect_error(api->plan_load_file("x.kplan", NULL, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "plan is NULL");
  expect_error(api->plan_load_file("/nonexistent/x.kplan", &plan, &error), &error, KILN_STATUS_NOT_FOUND,
               "/nonexistent/x.kplan: no such file");
  char photo[4096];
  snprintf(photo, sizeof photo, "%s/photos/dog.jpg", data_dir);
  expect_error(api->plan_load_file(photo, &plan, &error), &error, KILN_STATUS_FAILED, "dog.jpg");

  expect_error(api->plan_load_memory(NULL, 10, "x", &plan, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "data is NULL");
  expect_error(api->plan_load_memory("x", 1, "x", NULL, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "plan is NULL");
  expect_error(api->plan_load_memory(NULL, 0, "empty.kplan", &plan, &error), &error, KILN_STATUS_FAILED,
               "empty.kplan");
  size_t size = 0;
  char* bytes = read_fixture("plan.kplan", &size);
  expect_error(api->plan_load_memory(bytes, size / 2, "half.kplan", &plan, &error), &error,
               KILN_STATUS_FAILED, "half.kplan");
  expect_error(api->plan_load_memory(bytes, size / 2, NULL, &plan, &error), &error, KILN_STATUS_FAILED,
               "<memory>");
  CHECK(plan == NULL);
  free(bytes);
  api->plan_free(NULL);
  CHECK(strcmp(api->plan_family(NULL), "") == 0);
  CHECK(api->plan_batch(NULL) == 0);
}

static void test_engine_options(const kiln_plan* plan) {
  kiln_engine* engine = (kiln_engine*)&error;
  kiln_engine_options options = engine_options("cpu-reference");
  expect_error(api->engine_create(NULL, &options, &engine, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "plan is NULL");
  CHECK(engine == NULL);
  expect_error(api->engine_create(plan, &options, NULL, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "engine is NULL");
  options.struct_size = 0;
  expect_error(api->engine_create(plan, &options, &engine, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "engine options: struct_size 0");
  options = engine_options("tpu");
  expect_error(api->engine_create(plan, &options, &engine, &error), &error, KILN_STATUS_UNSUPPORTED,
               "unknown backend 'tpu'");
  options = engine_options("cpu-reference");
  options.device = 1;
  expect_error(api->engine_create(plan, &options, &engine, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "device 1: the cpu-reference backend has device 0 only");
  options = engine_options("cpu-reference");
  options.batch = -1;
  expect_error(api->engine_create(plan, &options, &engine, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "batch must be at least 1, got -1");
  options = engine_options("cpu-reference");
  options.threads = -2;
  expect_error(api->engine_create(plan, &options, &engine, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "threads must be 0 or more, got -2");
  options = engine_options("cuda"); /* a cuda build without a device, or no cuda backend at all */
  const kiln_status cuda = api->engine_create(plan, &options, &engine, &error);
  if (cuda == KILN_OK) {
    api->engine_free(engine);
  } else {
    expect_error(cuda, &error, KILN_STATUS_UNSUPPORTED, "cuda");
  }
  /* An older caller's shorter struct: the fields past struct_size take their defaults. */
  options = engine_options("cpu-reference");
  options.batch = 7;
  options.struct_size = offsetof(kiln_engine_options, batch);
  CHECK(api->engine_create(plan, &options, &engine, NULL) == KILN_OK);
  CHECK(api->engine_batch(engine) == api->plan_batch(plan));
  /* The reference backend runs every layer: no fallback, and no name past the end. */
  CHECK(api->engine_fallback_count(engine) == 0 && api->engine_fallback_layer(engine, 0) == NULL);
  api->engine_free(engine);
  api->engine_free(NULL);
  CHECK(api->engine_fallback_count(NULL) == 0 && api->engine_fallback_layer(NULL, 0) == NULL);
  CHECK(strcmp(api->engine_backend(NULL), "") == 0);
  CHECK(api->engine_batch(NULL) == 0);
  CHECK(api->engine_input_count(NULL) == 0 && api->engine_output_count(NULL) == 0);
}

/* A plan recorded for cuda runs on a CPU engine as the same plan recorded for it does (plans are portable:
 * the per-layer choices stored for another backend are not used). */
static void test_plan_of_another_backend(const kiln_plan* plan) {
  kiln_plan* cuda_plan = load_fixture_plan("plan_cuda.kplan");
  const kiln_plan* plans[2] = {plan, cuda_plan};
  float logits[2][20]; /* per plan, a [2, 10] batch */
  size_t input_size = 0;
  float* input = read_fixture("input.f32", &input_size);
  for (int i = 0; i < 2; ++i) {
    kiln_engine_options options = engine_options("cpu-reference");
    options.batch = 2;
    kiln_engine* engine = NULL;
    kiln_context* context = NULL;
    CHECK(api->engine_create(plans[i], &options, &engine, NULL) == KILN_OK);
    CHECK(strcmp(api->engine_backend(engine), "cpu-reference") == 0);
    CHECK(api->context_create(engine, &context, NULL) == KILN_OK);
    const int64_t in_shape[4] = {2, 3, 224, 224}, out_shape[2] = {2, 10};
    kiln_tensor in = {input, input_size, KILN_DTYPE_F32, 4, in_shape};
    kiln_tensor out = {logits[i], sizeof logits[i], KILN_DTYPE_F32, 2, out_shape};
    if (api->context_run(context, &in, 1, &out, 1, &error) != KILN_OK) {
      fprintf(stderr, "plan %d: %s\n", i, api->error_message(error));
      ++failures;
    }
    api->context_free(context);
    api->engine_free(engine);
  }
  CHECK(memcmp(logits[0], logits[1], sizeof logits[0]) == 0);
  free(input);
  api->plan_free(cuda_plan);
}

static void test_tensor_infos(const kiln_engine* engine) {
  kiln_tensor_info info;
  expect_error(api->engine_input_info(NULL, 0, &info, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "engine is NULL");
  expect_error(api->engine_input_info(engine, 0, NULL, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "info is NULL");
  expect_error(api->engine_input_info(engine, 1, &info, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "input 1: the engine has 1");
  expect_error(api->engine_output_info(NULL, 0, &info, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "engine is NULL");
  expect_error(api->engine_output_info(engine, 0, NULL, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "info is NULL");
  expect_error(api->engine_output_info(engine, 5, &info, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "output 5: the engine has 1");
}

static void test_runs(kiln_context* context) {
  static float input[3 * 224 * 224];
  float logits[10];
  const int64_t in_shape[4] = {1, 3, 224, 224}, out_shape[2] = {1, 10};
  kiln_tensor in = {input, sizeof input, KILN_DTYPE_F32, 4, in_shape};
  kiln_tensor out = {logits, sizeof logits, KILN_DTYPE_F32, 2, out_shape};
  CHECK(api->context_run(context, &in, 1, &out, 1, NULL) == KILN_OK);
  expect_error(api->context_run(NULL, &in, 1, &out, 1, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "context is NULL");
  expect_error(api->context_run(context, NULL, 1, &out, 1, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "inputs: the array is NULL");
  expect_error(api->context_run(context, &in, 1, NULL, 1, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "outputs: the array is NULL");
  const kiln_tensor two_inputs[2] = {in, in};
  expect_error(api->context_run(context, two_inputs, 2, &out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "expected 1 input, got 2");
  kiln_tensor bad = in;
  bad.dtype = (kiln_dtype)7;
  expect_error(api->context_run(context, &bad, 1, &out, 1, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "input 0: expected KILN_DTYPE_F32");
  bad = out;
  bad.dtype = (kiln_dtype)1;
  expect_error(api->context_run(context, &in, 1, &bad, 1, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "output 0: expected KILN_DTYPE_F32");
  bad = in;
  bad.rank = 3;
  expect_error(api->context_run(context, &bad, 1, &out, 1, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "expected shape [1, 3, 224, 224], got [1, 3, 224]");
  bad.rank = 4;
  bad.shape = NULL;
  expect_error(api->context_run(context, &bad, 1, &out, 1, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "input 0: the shape is NULL");
  bad = in;
  bad.size_bytes = sizeof input - 1;
  expect_error(api->context_run(context, &bad, 1, &out, 1, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "needs 602112");
  bad = in;
  bad.data = NULL;
  expect_error(api->context_run(context, &bad, 1, &out, 1, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "the data pointer is NULL");
  expect_error(api->context_run_device(NULL, &in, 1, &out, 1, NULL, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "context is NULL");
  /* Host memory handed over as device pointers on a CPU engine: refused before anything reads it. */
  expect_error(api->context_run_device(context, &in, 1, &out, 1, NULL, &error), &error,
               KILN_STATUS_UNSUPPORTED, "device buffers need a cuda engine, this one runs on cpu-reference");
}

static void test_classify(kiln_context* context) {
  kiln_classifications* result = (kiln_classifications*)&error;
  const unsigned char gray[4] = {1, 2, 3, 4};
  expect_error(api->classify_encoded(NULL, "x", 1, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "context is NULL");
  CHECK(result == NULL);
  expect_error(api->classify_encoded(context, NULL, 1, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "bytes is NULL");
  expect_error(api->classify_encoded(context, "x", 0, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image: no bytes");
  expect_error(api->classify_encoded(context, "x", 1, NULL, NULL, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "result is NULL");
  const kiln_classify_options short_options = {2, 3};
  expect_error(api->classify_encoded(context, "x", 1, &short_options, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "classify options: struct_size 2");
  expect_error(api->classify_encoded(context, "GIF89a", 6, NULL, &result, &error), &error, KILN_STATUS_FAILED,
               "image");

  kiln_image image = {sizeof(kiln_image), gray, 2, 2, 0, KILN_PIXELS_GRAY8};
  CHECK(api->classify_pixels(context, &image, NULL, &result, NULL) == KILN_OK);
  api->classifications_free(result);
  expect_error(api->classify_pixels(NULL, &image, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "context is NULL");
  expect_error(api->classify_pixels(context, NULL, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image is NULL");
  expect_error(api->classify_pixels(context, &image, NULL, NULL, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "result is NULL");
  image.struct_size = 1;
  expect_error(api->classify_pixels(context, &image, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image: struct_size 1");
  image.struct_size = sizeof image;
  image.pixels = NULL;
  expect_error(api->classify_pixels(context, &image, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image: the pixel pointer is NULL");
  image.pixels = gray;
  image.width = 0;
  expect_error(api->classify_pixels(context, &image, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image: expected a positive size, got 0x2");
  image.width = 2;
  image.layout = (kiln_pixel_layout)42;
  expect_error(api->classify_pixels(context, &image, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image: unknown pixel layout 42");
  image.layout = KILN_PIXELS_RGB8;
  image.row_stride = 5;
  expect_error(api->classify_pixels(context, &image, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "row stride of 5 bytes is shorter than a row of 2 pixels");
  CHECK(api->classifications_count(NULL) == 0);
  CHECK(api->classifications_at(NULL, 0) == NULL);
  api->classifications_free(NULL);
}

void test_image_runs(kiln_context* context); /* c_api_image_run_errors.c */

static void test_engine_and_context(const kiln_plan* plan) {
  kiln_engine_options options = engine_options("cpu-reference");
  kiln_engine* engine = NULL;
  CHECK(api->engine_create(plan, &options, &engine, NULL) == KILN_OK);
  test_tensor_infos(engine);
  kiln_context* context = (kiln_context*)&error;
  expect_error(api->context_create(NULL, &context, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "engine is NULL");
  CHECK(context == NULL);
  expect_error(api->context_create(engine, NULL, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "context is NULL");
  CHECK(api->context_create(engine, &context, NULL) == KILN_OK);
  test_runs(context);
  test_classify(context);
  test_image_runs(context);
  api->context_free(context);
  api->context_free(NULL);
  api->engine_free(engine);
}

void test_detectors(const kiln_plan* classifier, const char* data_dir); /* c_api_detector_errors.c */

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: c_api_errors_test FIXTURE_DIR DATA_DIR\n");
    return 2;
  }
  fixture = argv[1];
  data_dir = argv[2];
  if (kiln_get_api(KILN_ABI_MAJOR, KILN_ABI_MINOR, &api) != KILN_OK) return 1;
  test_entry_points();
  test_plans();
  kiln_plan* plan = load_fixture_plan("plan.kplan");
  test_engine_options(plan);
  test_plan_of_another_backend(plan);
  test_engine_and_context(plan);
  test_detectors(plan, data_dir);
  api->plan_free(plan);
  if (failures > 0) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures == 0 ? 0 : 1;
}
