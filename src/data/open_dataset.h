// Opening a dataset from what a user names on the command line.
#pragma once

#include <string>

#include "data/dataset.h"

namespace kiln {

// DATA is one of:
// - a brace pattern of tar shards ("shard-{000000..000009}.tar"), a .tar file, or a folder holding
//   .tar files and no images: a webdataset (webdataset.h);
// - a folder of images, flat or one sub-folder per class (folder_dataset.h).
// Fails with one line naming DATA when it is none of these, or holds no images.
Dataset open_dataset(const std::string& data);

}  // namespace kiln
