// The 1000 ImageNet-1k class names in the class index order of timm/PyTorch classifiers, compiled
// into the binary from data/imagenet_classes.txt (see data/SOURCES.md).
#pragma once

#include <string>
#include <vector>

namespace kiln {

// Index i is the name of class i, e.g. "tench, Tinca tinca" for class 0.
const std::vector<std::string>& imagenet_class_names();

}  // namespace kiln
