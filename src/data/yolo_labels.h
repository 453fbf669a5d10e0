// YOLO label files (the Ultralytics convention): for IMAGES/.../NAME.jpg, LABELS/.../NAME.txt where the
// last "/images/" of the image's path becomes "/labels/". One object per line, "CLASS CX CY W H": an
// integer class id, then the box's centre and size as fractions of the image's width and height, each
// in [0, 1]. Fields are separated by spaces or tabs; blank lines are skipped. An image without a label
// file holds no objects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// A label file larger than this is refused rather than read (a label file holds a few lines per object).
inline constexpr std::uintmax_t kMaxYoloLabelFileBytes = 16u << 20;

struct YoloBox {
  std::int64_t label = 0;
  double cx = 0, cy = 0, width = 0, height = 0;  // normalised by the image's width and height
};

// The lines of one label file; `origin` names it in errors ("ORIGIN:LINE: ..."). Classes must be below
// `num_classes`.
std::vector<YoloBox> parse_yolo_labels(std::string_view text, const std::string& origin,
                                       std::size_t num_classes);

// The label file's boxes; no boxes when the file does not exist.
std::vector<YoloBox> read_yolo_labels(const std::filesystem::path& file, std::size_t num_classes);

// Where an image's label file lives: its absolute path with the last "/images/" replaced by "/labels/"
// and the extension by ".txt"; nullopt when the path has no "images" folder.
std::optional<std::filesystem::path> yolo_label_path(const std::filesystem::path& image);

}  // namespace kiln
