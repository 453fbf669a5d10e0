/* The image runs' error paths (part of c_api_errors_test): context_run_encoded and context_run_pixels on a
 * cpu-reference context of the classifier fixture (batch 1). */
#include <stddef.h>
#include <string.h>

#include "c_test_support.h"

static kiln_error* error = NULL;

static void test_encoded(kiln_context* context, const kiln_tensor* out) {
  const void* images[2] = {"x", "x"};
  const size_t sizes[2] = {1, 1};
  expect_error(api->context_run_encoded(NULL, images, sizes, 1, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "context is NULL");
  expect_error(api->context_run_encoded(context, NULL, sizes, 1, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "images is NULL");
  expect_error(api->context_run_encoded(context, images, NULL, 1, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "sizes is NULL");
  expect_error(api->context_run_encoded(context, images, sizes, 0, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "no images given: an engine of batch 1 takes 1 to 1");
  expect_error(api->context_run_encoded(context, images, sizes, 2, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "2 images for an engine of batch 1: it takes at most 1");
  expect_error(api->context_run_encoded(context, images, sizes, 1, NULL, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "outputs: the array is NULL");
  const void* missing[1] = {NULL};
  expect_error(api->context_run_encoded(context, missing, sizes, 1, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image 0 is NULL");
  const size_t empty[1] = {0};
  expect_error(api->context_run_encoded(context, images, empty, 1, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image 0: no bytes");
  const void* gif[1] = {"GIF89a"};
  const size_t gif_size[1] = {6};
  expect_error(api->context_run_encoded(context, gif, gif_size, 1, out, 1, &error), &error,
               KILN_STATUS_FAILED, "image 0");
}

static void test_pixels(kiln_context* context, const kiln_tensor* out) {
  const unsigned char gray[4] = {1, 2, 3, 4};
  kiln_image image = {sizeof(kiln_image), gray, 2, 2, 0, KILN_PIXELS_GRAY8};
  const kiln_image* images[2] = {&image, &image};
  CHECK(api->context_run_pixels(context, images, 1, out, 1, NULL) == KILN_OK);
  expect_error(api->context_run_pixels(NULL, images, 1, out, 1, &error), &error, KILN_STATUS_INVALID_ARGUMENT,
               "context is NULL");
  expect_error(api->context_run_pixels(context, NULL, 1, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "images is NULL");
  expect_error(api->context_run_pixels(context, images, 2, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "2 images for an engine of batch 1: it takes at most 1");
  expect_error(api->context_run_pixels(context, images, 0, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "no images given");
  expect_error(api->context_run_pixels(context, images, 1, out, 0, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "expected 1 output, got 0");
  kiln_tensor short_out = *out;
  short_out.size_bytes -= 1;
  expect_error(api->context_run_pixels(context, images, 1, &short_out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "output 0 ('");
  short_out = *out;
  short_out.data = NULL;
  expect_error(api->context_run_pixels(context, images, 1, &short_out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "the data pointer is NULL");
  const kiln_image* missing[1] = {NULL};
  expect_error(api->context_run_pixels(context, missing, 1, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image 0 is NULL");
  image.struct_size = 1;
  expect_error(api->context_run_pixels(context, images, 1, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image 0: struct_size 1");
  image.struct_size = sizeof image;
  image.pixels = NULL;
  expect_error(api->context_run_pixels(context, images, 1, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image 0: the pixel pointer is NULL");
  image.pixels = gray;
  image.layout = (kiln_pixel_layout)42;
  expect_error(api->context_run_pixels(context, images, 1, out, 1, &error), &error,
               KILN_STATUS_INVALID_ARGUMENT, "image 0: unknown pixel layout 42");
}

void test_image_runs(kiln_context* context) {
  float logits[10];
  const int64_t out_shape[2] = {1, 10};
  const kiln_tensor out = {logits, sizeof logits, KILN_DTYPE_F32, 2, out_shape};
  test_encoded(context, &out);
  test_pixels(context, &out);
}
