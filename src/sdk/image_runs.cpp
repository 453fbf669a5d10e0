#include "sdk/image_runs.h"

#include "pipeline/detector_plan.h"

namespace kiln::embed {

void require_classifier_engine(const SdkEngine& engine, std::string_view call) {
  if (engine.plan().detector) {
    throw InvalidArgument(cat(call, " needs a classifier plan, this engine runs ",
                              pipeline::plan_kind(engine.plan()), " (detect with a detector made from it)"));
  }
}

void check_image_run(const SdkContext& context, std::size_t image_count, std::span<const BufferView> outputs,
                     std::string_view call) {
  const SdkEngine& engine = context.engine();
  require_classifier_engine(engine, call);
  check_image_count(image_count, engine.batch());
  context.check_host_outputs(outputs);
}

void run_images(SdkContext& context, std::span<const Image> images, std::span<const BufferView> outputs,
                std::string_view call) {
  check_image_run(context, images.size(), outputs, call);
  context.run_eval_transform(images, context.engine().plan().config.preprocess, outputs);
}

}  // namespace kiln::embed
