// Datasets kept as image files in a folder, in one of three layouts:
//
// - class folders: DIR/CLASS/.../image.jpg. Without a labels file the class index is the folder's
//   position among DIR's sorted sub-folders, as torchvision's ImageFolder assigns it (empty folders
//   keep their index). With DIR/labels.txt or DIR/labels.csv, its lines map folder names (ImageNet
//   synset ids, say) to indices, and every folder must be listed.
// - labelled folder: DIR/image.jpg with DIR/labels.txt or DIR/labels.csv mapping file names to
//   indices (see labels_file.h); every image must be listed.
// - folder: DIR/image.jpg and no labels file; the images are unlabelled.
//
// Images are the .jpg, .jpeg, .png and .webp files (any case); names starting with '.' are skipped.
// Images are sorted by path; class folders are searched recursively.
#pragma once

#include <filesystem>
#include <vector>

#include "data/dataset.h"

namespace kiln {

// Fails when the folder holds no images, or holds images both directly and in sub-folders.
Dataset open_folder_dataset(const std::filesystem::path& dir);

// Every image file under DIR (recursively), sorted by path.
std::vector<std::filesystem::path> find_image_files(const std::filesystem::path& dir);

}  // namespace kiln
