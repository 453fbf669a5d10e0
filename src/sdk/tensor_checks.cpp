#include "sdk/tensor_checks.h"

namespace kiln::embed {

void check_buffers(std::span<const BufferView> buffers, const std::vector<TensorInfo>& expected,
                   std::string_view role) {
  if (buffers.size() != expected.size()) {
    throw InvalidArgument(cat("expected ", expected.size(), " ", role, expected.size() == 1 ? "" : "s",
                              ", got ", buffers.size()));
  }
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const BufferView& buffer = buffers[i];
    const TensorInfo& info = expected[i];
    const std::string what = cat(role, " ", i, " ('", info.name, "')");
    if (buffer.shape != info.shape) {
      throw InvalidArgument(
          cat(what, ": expected shape ", shape_str(info.shape), ", got ", shape_str(buffer.shape)));
    }
    if (buffer.size_bytes < info.bytes()) {
      throw InvalidArgument(cat(what, ": the buffer holds ", buffer.size_bytes, " bytes, the f32 tensor ",
                                shape_str(info.shape), " needs ", info.bytes()));
    }
    if (buffer.data == nullptr) throw InvalidArgument(cat(what, ": the data pointer is NULL"));
  }
}

}  // namespace kiln::embed
