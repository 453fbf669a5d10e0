// Checks of a caller's buffers against an engine's inputs and outputs, each failure one line naming the
// tensor ("input 0 ('input'): ...") and what was expected.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "sdk/sdk_engine.h"

namespace kiln::embed {

// `role` is "input" or "output". Fails with InvalidArgument on a count, shape or size mismatch or a
// NULL data pointer.
void check_buffers(std::span<const BufferView> buffers, const std::vector<TensorInfo>& expected,
                   std::string_view role);

}  // namespace kiln::embed
