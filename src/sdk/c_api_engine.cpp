// The C API's plans, engines and contexts.
#include <filesystem>

#include "pipeline/model_loading.h"
#include "plan/plan_reader.h"
#include "sdk/c_api_internal.h"

namespace kiln::capi {

namespace {

using embed::InvalidArgument;

std::shared_ptr<const Plan> load_plan_file(const char* path) {
  const std::filesystem::path file(checked_text(path, "path"));
  std::error_code error;
  if (!std::filesystem::exists(file, error)) throw embed::NotFound(cat(file.string(), ": no such file"));
  return pipeline::load_plan(file);
}

kiln_status plan_load_file(const char* path, kiln_plan** plan, kiln_error** error) {
  return guard(error, [&] {
    checked(plan, "plan") = nullptr;
    *plan = new kiln_plan{load_plan_file(path), path};
  });
}

kiln_status plan_load_memory(const void* data, size_t size, const char* name, kiln_plan** plan,
                             kiln_error** error) {
  return guard(error, [&] {
    checked(plan, "plan") = nullptr;
    if (data == nullptr && size > 0) throw InvalidArgument("data is NULL");
    const std::span bytes(static_cast<const std::byte*>(data), size);
    const std::string shown = name ? name : "<memory>";
    *plan = new kiln_plan{std::make_shared<const Plan>(read_plan_bytes(bytes, shown)), shown};
  });
}

void plan_free(kiln_plan* plan) { delete plan; }

const char* plan_family(const kiln_plan* plan) { return plan ? plan->plan->info.family.c_str() : ""; }

int64_t plan_batch(const kiln_plan* plan) { return plan ? plan->plan->info.batch : 0; }

kiln_status engine_create(const kiln_plan* plan, const kiln_engine_options* options, kiln_engine** engine,
                          kiln_error** error) {
  return guard(error, [&] {
    checked(engine, "engine") = nullptr;
    auto made =
        std::make_shared<const embed::SdkEngine>(checked(plan, "plan").plan, engine_settings(options));
    auto handle = std::make_unique<kiln_engine>(kiln_engine{made, {}});
    for (const auto& info : made->inputs()) handle->names.push_back(info.name);
    for (const auto& info : made->outputs()) handle->names.push_back(info.name);
    *engine = handle.release();
  });
}

void engine_free(kiln_engine* engine) { delete engine; }

size_t engine_fallback_count(const kiln_engine* engine) {
  return engine ? engine->engine->fallback_layers().size() : 0;
}

const char* engine_fallback_layer(const kiln_engine* engine, size_t index) {
  if (engine == nullptr || index >= engine->engine->fallback_layers().size()) return nullptr;
  return engine->engine->fallback_layers()[index].c_str();
}

const char* engine_backend(const kiln_engine* engine) {
  return engine ? engine->engine->backend().c_str() : "";
}

int64_t engine_batch(const kiln_engine* engine) { return engine ? engine->engine->batch() : 0; }

size_t engine_input_count(const kiln_engine* engine) { return engine ? engine->engine->inputs().size() : 0; }

size_t engine_output_count(const kiln_engine* engine) {
  return engine ? engine->engine->outputs().size() : 0;
}

void fill_info(const embed::TensorInfo& tensor, const std::string& name, kiln_tensor_info& info) {
  if (tensor.shape.size() > KILN_MAX_RANK) {
    throw embed::Unsupported(cat(tensor.name, ": rank ", tensor.shape.size(), " exceeds KILN_MAX_RANK"));
  }
  info = kiln_tensor_info{};
  info.name = name.c_str();
  info.dtype = KILN_DTYPE_F32;
  info.rank = tensor.shape.size();
  std::copy(tensor.shape.begin(), tensor.shape.end(), info.shape);
}

kiln_status tensor_info(const kiln_engine* engine, size_t index, bool output, kiln_tensor_info* info,
                        kiln_error** error) {
  return guard(error, [&] {
    const kiln_engine& handle = checked(engine, "engine");
    const auto& tensors = output ? handle.engine->outputs() : handle.engine->inputs();
    if (index >= tensors.size()) {
      throw InvalidArgument(
          cat(output ? "output" : "input", " ", index, ": the engine has ", tensors.size()));
    }
    const std::size_t name = output ? handle.engine->inputs().size() + index : index;
    fill_info(tensors[index], handle.names[name], checked(info, "info"));
  });
}

kiln_status engine_input_info(const kiln_engine* engine, size_t index, kiln_tensor_info* info,
                              kiln_error** error) {
  return tensor_info(engine, index, false, info, error);
}

kiln_status engine_output_info(const kiln_engine* engine, size_t index, kiln_tensor_info* info,
                               kiln_error** error) {
  return tensor_info(engine, index, true, info, error);
}

kiln_status context_create(const kiln_engine* engine, kiln_context** context, kiln_error** error) {
  return guard(error, [&] {
    checked(context, "context") = nullptr;
    *context = new kiln_context{embed::SdkContext(checked(engine, "engine").engine)};
  });
}

void context_free(kiln_context* context) { delete context; }

kiln_status context_run(kiln_context* context, const kiln_tensor* inputs, size_t input_count,
                        const kiln_tensor* outputs, size_t output_count, kiln_error** error) {
  return guard(error, [&] {
    checked(context, "context")
        .context.run_host(buffer_views(inputs, input_count, "input"),
                          buffer_views(outputs, output_count, "output"));
  });
}

kiln_status context_run_device(kiln_context* context, const kiln_tensor* inputs, size_t input_count,
                               const kiln_tensor* outputs, size_t output_count, void* cuda_stream,
                               kiln_error** error) {
  return guard(error, [&] {
    kiln_context& handle = checked(context, "context");
    if (handle.context.engine().device() == nullptr) {
      throw embed::Unsupported(
          cat("device buffers need a cuda engine, this one runs on ", handle.context.engine().backend()));
    }
    handle.context.run_device(buffer_views(inputs, input_count, "input"),
                              buffer_views(outputs, output_count, "output"), cuda_stream);
  });
}

}  // namespace

std::vector<embed::BufferView> buffer_views(const kiln_tensor* tensors, size_t count, const char* role) {
  if (tensors == nullptr && count > 0) throw InvalidArgument(cat(role, "s: the array is NULL"));
  std::vector<embed::BufferView> views;
  for (size_t i = 0; i < count; ++i) {
    const kiln_tensor& t = tensors[i];
    if (t.dtype != KILN_DTYPE_F32) throw InvalidArgument(cat(role, " ", i, ": expected KILN_DTYPE_F32"));
    if (t.rank > 0 && t.shape == nullptr) throw InvalidArgument(cat(role, " ", i, ": the shape is NULL"));
    views.push_back({t.data, t.size_bytes, Shape(t.shape, t.shape + t.rank)});
  }
  return views;
}

embed::EngineSettings engine_settings(const kiln_engine_options* options) {
  const kiln_engine_options given =
      read_options(options, defaults_of<kiln_engine_options>(), "engine options");
  embed::EngineSettings settings;
  settings.backend = given.backend ? given.backend : "";
  settings.device = given.device;
  settings.batch = given.batch;
  settings.threads = given.threads;
  settings.strict_backend = given.strict_backend != 0;
  settings.tactic_cache = given.tactic_cache ? given.tactic_cache : "";
  return settings;
}

void add_plan_and_engine_entries(kiln_api& api) {
  api.plan_load_file = plan_load_file;
  api.plan_load_memory = plan_load_memory;
  api.plan_free = plan_free;
  api.plan_family = plan_family;
  api.plan_batch = plan_batch;
  api.engine_create = engine_create;
  api.engine_free = engine_free;
  api.engine_backend = engine_backend;
  api.engine_batch = engine_batch;
  api.engine_input_count = engine_input_count;
  api.engine_output_count = engine_output_count;
  api.engine_input_info = engine_input_info;
  api.engine_output_info = engine_output_info;
  api.engine_fallback_count = engine_fallback_count;
  api.engine_fallback_layer = engine_fallback_layer;
  api.context_create = context_create;
  api.context_free = context_free;
  api.context_run = context_run;
  api.context_run_device = context_run_device;
}

}  // namespace kiln::capi
