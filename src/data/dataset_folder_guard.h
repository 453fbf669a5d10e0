// The folder a command writes a dataset into (kiln dataset import-idx -o OUT): never over an input,
// never into a folder that holds something unless the user says so (--force), and never leaving a
// file beside the new dataset that its readers would take as part of it. Nothing is ever deleted.
#pragma once

#include <filesystem>
#include <set>
#include <vector>

#include "io/output_guard.h"

namespace kiln {

// Before the inputs are read: fails when DIR is a file (or one of `inputs`), or holds anything and
// `force` is false.
void check_dataset_folder(const std::filesystem::path& dir, const std::vector<NamedPath>& inputs, bool force);

// Once the files to write are known (`files`, relative to DIR): fails when one of them is an input,
// or when DIR holds a file a dataset reader would pick up (an image, a .tar shard, labels.txt or
// labels.csv) that is not one of them, since the dataset would then hold more than was written.
void check_dataset_folder_files(const std::filesystem::path& dir,
                                const std::set<std::filesystem::path>& files,
                                const std::vector<NamedPath>& inputs);

}  // namespace kiln
