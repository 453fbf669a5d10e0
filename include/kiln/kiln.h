/* kiln's C API: load a plan, compile it into an engine on a backend, run it from one context per thread,
 * classify images and detect objects. libkiln.so exports this and nothing else.
 *
 * Every entry point is reached through the function table kiln_get_api() returns, so that a program
 * built against an older header keeps working with a newer library: the table only grows, and its first
 * field says how large the library's table is. Option structs start with struct_size for the same reason
 * (set it to sizeof the struct you fill; fields past it take their defaults).
 *
 * Calls return a kiln_status. On failure, when `error` is not NULL, *error receives an error object
 * carrying the status and the one-line message `kiln` prints after "kiln: error: "; free it with
 * error_free. No C++ exception crosses this interface. Strings the library returns stay valid as long as
 * the object they came from. See docs/API.md and docs/api/C.md. */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include <stddef.h>
#include <stdint.h>

#if defined(KILN_BUILDING_LIBRARY)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. A library serves a request for major KILN_ABI_MAJOR and any
 * minor up to its own. */
#define KILN_ABI_MAJOR 1
#define KILN_ABI_MINOR 4

typedef enum kiln_status {
  KILN_OK = 0,
  KILN_STATUS_INVALID_ARGUMENT = 1, /* a NULL handle, a bad struct_size, a wrong shape, dtype or size */
  KILN_STATUS_NOT_FOUND = 2,        /* a file that does not exist */
  KILN_STATUS_UNSUPPORTED = 3,      /* an ABI version, backend or call this library does not offer */
  KILN_STATUS_FAILED = 4,           /* what kiln refuses with a message: a malformed plan, a bad image */
  KILN_STATUS_OUT_OF_MEMORY = 5,
  KILN_STATUS_INTERNAL = 6 /* a fault inside kiln (the message starts "internal: ") */
} kiln_status;

typedef enum kiln_dtype {
  KILN_DTYPE_F32 = 0 /* the only dtype engines take and return */
} kiln_dtype;

/* How interleaved 8-bit pixels are laid out, for kiln_image. */
typedef enum kiln_pixel_layout {
  KILN_PIXELS_RGB8 = 0,
  KILN_PIXELS_BGR8 = 1,
  KILN_PIXELS_RGBA8 = 2, /* alpha dropped */
  KILN_PIXELS_BGRA8 = 3,
  KILN_PIXELS_GRAY8 = 4
} kiln_pixel_layout;

typedef struct kiln_error kiln_error;
typedef struct kiln_plan kiln_plan;
typedef struct kiln_engine kiln_engine;
typedef struct kiln_context kiln_context;
typedef struct kiln_classifications kiln_classifications;
typedef struct kiln_detector kiln_detector;
typedef struct kiln_detections kiln_detections;

#define KILN_MAX_RANK 8

/* An engine input or output. */
typedef struct kiln_tensor_info {
  const char* name; /* the graph value's name */
  kiln_dtype dtype;
  size_t rank;
  int64_t shape[KILN_MAX_RANK];
} kiln_tensor_info;

/* Caller-owned memory holding one tensor, dense and row-major. On host runs `data` is host memory, on
 * device runs a CUDA device pointer. `shape` (rank entries) must equal the engine's. */
typedef struct kiln_tensor {
  void* data;
  size_t size_bytes; /* at least the tensor's bytes */
  kiln_dtype dtype;
  size_t rank;
  const int64_t* shape;
} kiln_tensor;

typedef struct kiln_engine_options {
  size_t struct_size;
  const char* backend;      /* "cpu", "cpu-reference" or "cuda"; NULL: the fastest CPU backend built in */
  int device;               /* the CUDA device ordinal on "cuda"; must be 0 elsewhere */
  int64_t batch;            /* 0: the batch the plan was built for */
  int threads;              /* CPU threads, 0: the team chosen at load (docs/API.md#threads) */
  int strict_backend;       /* nonzero: refuse layers the backend cannot run instead of a CPU fallback */
  const char* tactic_cache; /* cuda: file of timed tactics to reuse and extend; NULL: none */
} kiln_engine_options;

/* Pixels in memory: height rows of width pixels, row_stride bytes apart (0: tightly packed). */
typedef struct kiln_image {
  size_t struct_size;
  const uint8_t* pixels;
  int64_t width;
  int64_t height;
  size_t row_stride;
  kiln_pixel_layout layout;
} kiln_image;

typedef struct kiln_classify_options {
  size_t struct_size;
  size_t top_k; /* 0: 5 */
} kiln_classify_options;

/* A detector family's checkpoint with its config.json, for detector_create (a detector plan goes to
 * detector_create_from_plan instead). */
typedef struct kiln_detector_source {
  size_t struct_size;
  const char* family;     /* "yolov10" */
  const char* checkpoint; /* model.safetensors */
  const char* config;     /* config.json; NULL: the one beside the checkpoint */
} kiln_detector_source;

typedef struct kiln_detect_options {
  size_t struct_size;
  float min_score; /* boxes scoring below are dropped; default 0.25 (used when struct_size excludes it) */
} kiln_detect_options;

typedef struct kiln_detection {
  float x1, y1, x2, y2; /* corners in the original image's pixels */
  float score;
  int64_t class_index;
  const char* class_name; /* the config's name, else "class N" */
} kiln_detection;

typedef struct kiln_class_score {
  int64_t class_index;
  double probability; /* softmax over every logit */
  double logit;
  const char* label; /* the plan's label, ImageNet's for a 1000-class model, else "class N" */
} kiln_class_score;

/* The function table. New entries are only ever appended. */
typedef struct kiln_api {
  size_t struct_size;           /* sizeof the library's table: entries past it are absent */
  const char* (*version)(void); /* kiln's version, e.g. "0.1.0" */

  kiln_status (*error_status)(const kiln_error* error);
  const char* (*error_message)(const kiln_error* error);
  void (*error_free)(kiln_error* error);

  /* Plans: from a .kplan file, or from its bytes (copied; `name` stands for them in messages). */
  kiln_status (*plan_load_file)(const char* path, kiln_plan** plan, kiln_error** error);
  kiln_status (*plan_load_memory)(const void* data, size_t size, const char* name, kiln_plan** plan,
                                  kiln_error** error);
  void (*plan_free)(kiln_plan* plan);
  const char* (*plan_family)(const kiln_plan* plan);
  int64_t (*plan_batch)(const kiln_plan* plan);

  /* Engines: the plan compiled on a backend and device. An engine keeps what it needs of the plan. */
  kiln_status (*engine_create)(const kiln_plan* plan, const kiln_engine_options* options,
                               kiln_engine** engine, kiln_error** error);
  void (*engine_free)(kiln_engine* engine);
  const char* (*engine_backend)(const kiln_engine* engine);
  int64_t (*engine_batch)(const kiln_engine* engine);
  size_t (*engine_input_count)(const kiln_engine* engine);
  size_t (*engine_output_count)(const kiln_engine* engine);
  kiln_status (*engine_input_info)(const kiln_engine* engine, size_t index, kiln_tensor_info* info,
                                   kiln_error** error);
  kiln_status (*engine_output_info)(const kiln_engine* engine, size_t index, kiln_tensor_info* info,
                                    kiln_error** error);

  /* Contexts: what runs. Each owns its compiled program (activations, staging) and shares the plan's
   * weights; one thread uses a context at a time, any number of contexts run at once. */
  kiln_status (*context_create)(const kiln_engine* engine, kiln_context** context, kiln_error** error);
  void (*context_free)(kiln_context* context);
  /* Host buffers in, host buffers out, in the engine's input and output order; returns when done. */
  kiln_status (*context_run)(kiln_context* context, const kiln_tensor* inputs, size_t input_count,
                             const kiln_tensor* outputs, size_t output_count, kiln_error** error);
  /* cuda engines: CUDA device pointers the caller owns, enqueued on `cuda_stream` (a cudaStream_t; NULL:
   * the legacy default stream) and not waited for. The network replays as one CUDA graph on that stream,
   * reading the inputs from and writing the outputs into these buffers (no copies); the buffers must stay
   * valid until the stream reaches that point, and a context's device runs must be ordered on the device
   * (one stream, or synchronized between streams). */
  kiln_status (*context_run_device)(kiln_context* context, const kiln_tensor* inputs, size_t input_count,
                                    const kiln_tensor* outputs, size_t output_count, void* cuda_stream,
                                    kiln_error** error);

  /* Classification with a classifier plan's preprocessing (timm's eval transform) and labels: an
   * encoded JPEG / PNG / WebP, or pixels. The image fills row 0 of the batch; the other rows are zeros. */
  kiln_status (*classify_encoded)(kiln_context* context, const void* bytes, size_t size,
                                  const kiln_classify_options* options, kiln_classifications** result,
                                  kiln_error** error);
  kiln_status (*classify_pixels)(kiln_context* context, const kiln_image* image,
                                 const kiln_classify_options* options, kiln_classifications** result,
                                 kiln_error** error);
  size_t (*classifications_count)(const kiln_classifications* result);
  /* Best first; NULL past the end. */
  const kiln_class_score* (*classifications_at)(const kiln_classifications* result, size_t index);
  void (*classifications_free)(kiln_classifications* result);

  /* Detection: letterboxed in, boxes in original pixels out. A detector is used by one thread at a time. */
  kiln_status (*detector_create)(const kiln_detector_source* source, const kiln_engine_options* options,
                                 kiln_detector** detector, kiln_error** error);
  void (*detector_free)(kiln_detector* detector);
  size_t (*detector_class_count)(const kiln_detector* detector);
  kiln_status (*detect_encoded)(kiln_detector* detector, const void* bytes, size_t size,
                                const kiln_detect_options* options, kiln_detections** result,
                                kiln_error** error);
  kiln_status (*detect_pixels)(kiln_detector* detector, const kiln_image* image,
                               const kiln_detect_options* options, kiln_detections** result,
                               kiln_error** error);
  size_t (*detections_count)(const kiln_detections* result);
  const kiln_detection* (*detections_at)(const kiln_detections* result, size_t index);
  void (*detections_free)(kiln_detections* result);

  /* ABI 1.1. A detector from a detector plan (`kiln build yolov10 ...`), loaded with plan_load_file or
   * plan_load_memory; a classifier plan is refused (KILN_STATUS_INVALID_ARGUMENT). The detector keeps
   * what it needs of the plan. options->batch must be 0 or 1. */
  kiln_status (*detector_create_from_plan)(const kiln_plan* plan, const kiln_engine_options* options,
                                           kiln_detector** detector, kiln_error** error);

  /* ABI 1.2. The layers the engine runs on the CPU fallback because its backend has no kernel for them
   * (none when options->strict_backend was set: such an engine is refused instead). Their count, and the
   * name of layer `index` (NULL past the end), valid while the engine lives. */
  size_t (*engine_fallback_count)(const kiln_engine* engine);
  const char* (*engine_fallback_layer)(const kiln_engine* engine, size_t index);

  /* ABI 1.3. A batch of images under a classifier plan's preprocessing (timm's eval transform, as
   * classify), the raw outputs of the whole batch written into host buffers as context_run writes them:
   * image i fills batch slot i, the slots past image_count are zeros. image_count is 1 to the engine's
   * batch. On cuda engines each image is preprocessed on the device (the same input bits as on the host).
   * Encoded JPEG / PNG / WebP images: images[i] holds sizes[i] bytes. */
  kiln_status (*context_run_encoded)(kiln_context* context, const void* const* images, const size_t* sizes,
                                     size_t image_count, const kiln_tensor* outputs, size_t output_count,
                                     kiln_error** error);
  /* Pixels: images[i] points at one kiln_image. */
  kiln_status (*context_run_pixels)(kiln_context* context, const kiln_image* const* images,
                                    size_t image_count, const kiln_tensor* outputs, size_t output_count,
                                    kiln_error** error);

  /* ABI 1.4. The backends this library offers here, the default first: the CPU backends, then cuda where
   * its plugin (libkiln_cuda.so) is installed beside the library. NULL past the end. */
  const char* (*backend_at)(size_t index);
  /* One line on a backend, as `kiln --version` prints it: for cuda, the plugin it loaded and what it runs
   * on, or why it does not load here (the library it lacks); "built in" for the CPU backends; NULL for a
   * name this library does not know. Valid for the life of the process. */
  const char* (*backend_status)(const char* backend);
} kiln_api;

/* The table for ABI `major`.`minor`: KILN_STATUS_UNSUPPORTED when major differs from the library's or
 * minor is newer. Call it as kiln_get_api(KILN_ABI_MAJOR, KILN_ABI_MINOR, &api). The table is static. */
KILN_API kiln_status kiln_get_api(uint32_t major, uint32_t minor, const kiln_api** api);

/* The status's name, e.g. "KILN_STATUS_NOT_FOUND" (never NULL). */
KILN_API const char* kiln_status_name(kiln_status status);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_H */
