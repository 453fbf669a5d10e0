/* The detector calls' error paths (part of c_api_errors_test): sources, detector plans, classifier plans
 * given to detectors and detector plans given to classify, images and options. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_test_support.h"

static kiln_error* error = NULL;

static void test_sources(const char* data_dir) {
  char checkpoint[4096], config[4096];
  snprintf(checkpoint, sizeof checkpoint, "%s/golden/yolov10n/model.safetensors", data_dir);
  snprintf(config, sizeof config, "%s/golden/yolov10n/config.json", data_dir);
  kiln_detector_source source = {sizeof(kiln_detector_source), "yolov10", checkpoint, config};
  kiln_detector* detector = (kiln_detector*)&error;
  expect_error(api->detector_create(NULL, NULL, &detector, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "source is NULL");
  CHECK(detector == NULL);
  expect_error(api->detector_create(&source, NULL, NULL, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "detector is NULL");
  source.struct_size = 0;
  expect_error(api->detector_create(&source, NULL, &detector, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "source: struct_size 0");
  source.struct_size = offsetof(kiln_detector_source, checkpoint); /* the checkpoint takes its default */
  expect_error(api->detector_create(&source, NULL, &detector, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "source checkpoint is NULL");
  source.struct_size = sizeof source;
  source.family = NULL;
  expect_error(api->detector_create(&source, NULL, &detector, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "source family is NULL");
  source.family = "timm_resnest";
  expect_error(api->detector_create(&source, NULL, &detector, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "'timm_resnest' is not a detector family (known: yolov10)");
  source.family = "yolov10";
  source.checkpoint = "/nonexistent/model.safetensors";
  expect_error(api->detector_create(&source, NULL, &detector, &error), &error, KILN_STATUS_NOT_FOUND,
               "/nonexistent/model.safetensors: no such file");
  source.checkpoint = checkpoint;
  source.config = "/nonexistent/config.json";
  expect_error(api->detector_create(&source, NULL, &detector, &error), &error, KILN_STATUS_NOT_FOUND,
               "/nonexistent/config.json: no such file");
  source.config = config;
  kiln_engine_options options = {sizeof(kiln_engine_options), NULL, 0, 2, 0, 0, NULL};
  expect_error(api->detector_create(&source, &options, &detector, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "a detector runs one image at a time, got batch 2");
  options.batch = 0;
  options.backend = "tpu";
  expect_error(api->detector_create(&source, &options, &detector, &error), &error, KILN_STATUS_UNSUPPORTED,
               "unknown backend 'tpu'");
  options.backend = NULL;
  options.device = 3;
  expect_error(api->detector_create(&source, &options, &detector, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "device 3");
  options.struct_size = 0;
  expect_error(api->detector_create(&source, &options, &detector, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "engine options: struct_size 0");
}

static kiln_plan* detector_plan(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/det.kplan", fixture);
  kiln_plan* plan = NULL;
  if (api->plan_load_file(path, &plan, &error) != KILN_OK) {
    fprintf(stderr, "%s\n", api->error_message(error));
    exit(1);
  }
  return plan;
}

/* Plans of the wrong kind: a classifier plan to a detector, a detector plan to classify. */
static void test_plan_kinds(const kiln_plan* classifier, const kiln_plan* detector_plan) {
  kiln_detector* detector = (kiln_detector*)&error;
  expect_error(api->detector_create_from_plan(NULL, NULL, &detector, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "plan is NULL");
  CHECK(detector == NULL);
  expect_error(api->detector_create_from_plan(detector_plan, NULL, NULL, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "detector is NULL");
  expect_error(api->detector_create_from_plan(classifier, NULL, &detector, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "plan.kplan: a timm_resnest classifier plan; a detector needs");
  kiln_engine_options options = {sizeof(kiln_engine_options), "cpu-reference", 0, 4, 0, 0, NULL};
  expect_error(api->detector_create_from_plan(detector_plan, &options, &detector, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "got batch 4");

  options.batch = 0;
  kiln_engine* engine = NULL;
  kiln_context* context = NULL;
  CHECK(api->engine_create(detector_plan, &options, &engine, NULL) == KILN_OK);
  CHECK(api->context_create(engine, &context, NULL) == KILN_OK);
  const unsigned char gray[4] = {1, 2, 3, 4};
  const kiln_image image = {sizeof(kiln_image), gray, 2, 2, 0, KILN_PIXELS_GRAY8};
  kiln_classifications* result = NULL;
  expect_error(api->classify_pixels(context, &image, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT,
               "classify needs a classifier plan, this engine runs a yolov10 detector plan");
  CHECK(result == NULL);
  /* Image runs check the plan's kind before the output buffers. */
  float decoded[16];
  const int64_t shape[2] = {1, 16};
  const kiln_tensor out = {decoded, sizeof decoded, KILN_DTYPE_F32, 2, shape};
  const kiln_image* images[1] = {&image};
  expect_error(api->context_run_pixels(context, images, 1, &out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT,
               "context_run_pixels needs a classifier plan, this engine runs a yolov10 detector plan");
  const void* encoded[1] = {"x"};
  const size_t sizes[1] = {1};
  expect_error(api->context_run_encoded(context, encoded, sizes, 1, &out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "context_run_encoded needs a classifier plan");
  api->context_free(context);
  api->engine_free(engine);
}

static void test_detect_calls(kiln_detector* detector) {
  kiln_detections* result = (kiln_detections*)&error;
  const unsigned char gray[64 * 48] = {0};
  kiln_image image = {sizeof(kiln_image), gray, 64, 48, 0, KILN_PIXELS_GRAY8};
  CHECK(api->detect_pixels(detector, &image, NULL, &result, NULL) == KILN_OK);
  api->detections_free(result);
  expect_error(api->detect_pixels(NULL, &image, NULL, &result, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "detector is NULL");
  CHECK(result == NULL);
  expect_error(api->detect_pixels(detector, NULL, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image is NULL");
  expect_error(api->detect_pixels(detector, &image, NULL, NULL, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "result is NULL");
  image.height = -1;
  expect_error(api->detect_pixels(detector, &image, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "expected a positive size, got 64x-1");
  image.height = 48;
  const kiln_detect_options short_options = {3, 0.5f};
  expect_error(api->detect_pixels(detector, &image, &short_options, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "detect options: struct_size 3");
  expect_error(api->detect_encoded(NULL, "x", 1, NULL, &result, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "detector is NULL");
  expect_error(api->detect_encoded(detector, NULL, 1, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "bytes is NULL");
  expect_error(api->detect_encoded(detector, "x", 1, NULL, NULL, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "result is NULL");
  expect_error(api->detect_encoded(detector, "x", 0, NULL, &result, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image: no bytes");
  expect_error(api->detect_encoded(detector, "\x89PNG", 4, NULL, &result, &error), &error, KILN_STATUS_FAILED,
               "image");
  CHECK(api->detections_count(NULL) == 0);
  CHECK(api->detections_at(NULL, 0) == NULL);
  api->detections_free(NULL);
}

void test_detectors(const kiln_plan* classifier, const char* data_dir) {
  test_sources(data_dir);
  kiln_plan* plan = detector_plan();
  CHECK(strcmp(api->plan_family(plan), "yolov10") == 0);
  test_plan_kinds(classifier, plan);
  kiln_detector* detector = NULL;
  CHECK(api->detector_create_from_plan(plan, NULL, &detector, NULL) == KILN_OK);
  CHECK(api->detector_class_count(detector) == 10);
  test_detect_calls(detector);
  api->detector_free(detector);
  api->detector_free(NULL);
  CHECK(api->detector_class_count(NULL) == 0);
  api->plan_free(plan);
}
