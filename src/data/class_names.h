// Class names of a dataset kiln writes, kept in the labels-file format kiln's datasets read
// (labels_file.h): one "NAME,LABEL" line per class, in OUT/labels.txt. In a folder of class folders
// that file maps each folder to its index (so the order of folder names does not matter); beside
// webdataset shards it names the classes the .cls members number.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace kiln {

// Name by class index, from a labels file ("Ankle boot,9"). Fails naming the file when two lines give
// the same index or an index in [0, last] has no name.
std::vector<std::string> read_class_names(const std::filesystem::path& path);

// "0", "1", ... for `count` classes that have no names.
std::vector<std::string> index_class_names(std::size_t count);

// The names as folder names: '/', '\' and control characters become '_', as does a leading '.'
// (which would hide the folder). Fails naming `source` when two names give the same folder.
std::vector<std::string> class_folder_names(const std::vector<std::string>& names, const std::string& source);

// The class names of a webdataset: the labels file (labels.txt or labels.csv) in its first shard's
// folder, as import-idx writes it; nullopt for other datasets or when there is none.
std::optional<std::vector<std::string>> webdataset_class_names(const Dataset& dataset);

// The labels file listing `names` by index, with a comment line first.
std::string class_names_text(const std::vector<std::string>& names);

}  // namespace kiln
