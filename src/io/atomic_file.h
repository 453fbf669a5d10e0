// Writing a file so that a failure never destroys what was there: write a temp file in the same
// folder, flush it, then rename it over the destination.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>

namespace kiln {

void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);

}  // namespace kiln
