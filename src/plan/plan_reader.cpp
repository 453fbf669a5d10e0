#include "plan/plan_reader.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <ios>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/regular_file.h"
#include "core/sha256.h"
#include "graph/verifier.h"
#include "io/user_json.h"
#include "plan/attributes_json.h"
#include "plan/json_field.h"
#include "plan/plan_format.h"
#include "plan/plan_info_json.h"
#include "plan/plan_magic.h"

namespace kiln {

namespace {

// Constants become views of the file's bytes, which the format defines as little-endian.
static_assert(std::endian::native == std::endian::little, "plan constants are stored little-endian");

namespace fmt = plan_format;

// Bounds on shapes from the file, so that no arithmetic on a corrupt shape can overflow.
constexpr std::int64_t kMaxExtent = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kMaxElements = std::int64_t{1} << 48;

constexpr std::align_val_t kAlign{fmt::kAlignment};

// The whole file, in one 64-byte-aligned allocation that constants keep alive.
struct FileBuffer {
  std::shared_ptr<const std::byte> data;
  std::size_t size = 0;
};

FileBuffer aligned_buffer(std::size_t size) {
  auto* raw = static_cast<std::byte*>(::operator new(std::max<std::size_t>(size, 1), kAlign));
  std::shared_ptr<const std::byte> owner(
      raw, [](const std::byte* bytes) { ::operator delete(const_cast<std::byte*>(bytes), kAlign); });
  return {std::move(owner), size};
}

FileBuffer read_file(const std::filesystem::path& path, const std::string& name) {
  // No bound but the file's own size: a plan holds its weights, and its sections' lengths are checked
  // against that size before anything is trusted.
  const RegularFile opened = RegularFile::open(path, name);
  const auto size = static_cast<std::size_t>(opened.size());
  FileBuffer file = aligned_buffer(size);
  const std::size_t got = opened.read_at(0, const_cast<std::byte*>(file.data.get()), size);
  require(got == size, name, ": read error after ", got, " of ", size, " bytes");
  return file;
}

template <typename Unsigned>
Unsigned load_little_endian(const std::byte* bytes) {
  Unsigned value = 0;
  for (std::size_t i = 0; i < sizeof(Unsigned); ++i) value |= static_cast<Unsigned>(bytes[i]) << (8 * i);
  return value;
}

// Where the parts of a checked file are.
struct Sections {
  std::uint32_t version = 0;
  std::uint32_t flags = 0;
  std::size_t header_size = 0;
  std::size_t blob_offset = 0;
  std::size_t blob_size = 0;
};

// Checks everything outside the header: magic, version, flags, lengths, end marker and (unless the
// caller opted out) checksum.
Sections check_container(const FileBuffer& file, const std::string& name, bool verify_checksum) {
  const std::byte* bytes = file.data.get();
  const std::size_t size = file.size;
  require(size != 0, name, ": empty file, not a kiln plan");
  if (!agrees_with_plan_magic({bytes, size})) {
    reject_other_file_kind({reinterpret_cast<const std::uint8_t*>(bytes), std::min(size, kFileKindHeadSize)},
                           FileKind::kPlan, name, "a kiln plan");
    fail(name, ": not a kiln plan (it does not start with \"KILNPLAN\")");
  }
  require(size >= fmt::kPreambleSize, name, ": truncated: the file ends inside its ", fmt::kPreambleSize,
          "-byte preamble");

  Sections sections;
  sections.version = load_little_endian<std::uint32_t>(bytes + 8);
  const auto flags = sections.flags = load_little_endian<std::uint32_t>(bytes + 12);
  const auto header_size = load_little_endian<std::uint64_t>(bytes + 16);
  require(sections.version <= fmt::kVersion, name, ": made by a newer kiln: format ", sections.version,
          ", this kiln reads up to ", fmt::kVersion);
  require(sections.version != 0, name, ": format version 0 does not exist: the file is corrupt");
  require((flags & ~fmt::kKnownFlags) == 0, name, ": made by a newer kiln: it sets flags 0x", std::hex,
          flags & ~fmt::kKnownFlags, " this kiln does not know");

  const std::size_t room =
      size >= fmt::kPreambleSize + fmt::kTrailerSize ? size - fmt::kPreambleSize - fmt::kTrailerSize : 0;
  require(header_size <= room, name, ": truncated: the ", header_size,
          "-byte header runs past the end of the ", size, "-byte file");
  sections.header_size = static_cast<std::size_t>(header_size);
  sections.blob_offset = fmt::align_up(fmt::kPreambleSize + sections.header_size);
  const std::size_t trailer_offset = size - std::min(size, fmt::kTrailerSize);
  require(size >= fmt::kPreambleSize + fmt::kTrailerSize && sections.blob_offset <= trailer_offset, name,
          ": truncated: the file ends before its weights begin");
  require(
      std::memcmp(bytes + size - fmt::kEndMarker.size(), fmt::kEndMarker.data(), fmt::kEndMarker.size()) == 0,
      name, ": truncated or corrupt: the end marker \"KPLANEND\" is missing");
  sections.blob_size = trailer_offset - sections.blob_offset;
  if (!verify_checksum) return sections;

  Sha256 hash;
  hash.update(std::span(bytes, trailer_offset));
  const std::array<std::uint8_t, 32> digest = hash.finish();
  require(std::memcmp(digest.data(), bytes + trailer_offset, digest.size()) == 0, name,
          ": checksum mismatch: the file is corrupt or truncated");
  return sections;
}

// One entry of the header's value table.
struct FileValue {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  bool constant = false;
  std::size_t offset = 0;  // in the blob
};

FileValue parse_value(const JsonField& field, std::size_t blob_size) {
  FileValue value;
  value.name = field["name"].as_string();
  const JsonField dtype = field["dtype"];
  const std::optional<DType> known = dtype_from_safetensors_name(dtype.as_string());
  if (!known) dtype.fail(cat("unknown dtype '", dtype.as_string(), "'"));
  value.dtype = *known;
  const JsonField shape = field["shape"];
  value.shape = shape.as_int_vector(-1, kMaxExtent);
  std::int64_t elements = 1;
  for (const std::int64_t extent : value.shape) {
    // Checked before multiplying: 2^48 * an extent up to 2^31 would overflow int64.
    const std::int64_t factor = std::max<std::int64_t>(extent, 1);
    if (elements > kMaxElements / factor) shape.fail("expected a shape of at most 2^48 elements");
    elements *= factor;
  }

  const std::optional<JsonField> data = field.find("data");
  if (!data) return value;
  value.constant = true;
  if (std::any_of(value.shape.begin(), value.shape.end(), [](std::int64_t extent) { return extent < 0; })) {
    shape.fail(cat("constant '", value.name, "' has an unknown extent"));
  }
  const JsonField offset = (*data)["offset"];
  const JsonField size = (*data)["size"];
  value.offset = static_cast<std::size_t>(offset.as_int(0));
  const auto byte_count = static_cast<std::size_t>(size.as_int(0));
  const auto expected = static_cast<std::size_t>(shape_numel(value.shape)) * dtype_size(value.dtype);
  if (byte_count != expected) {
    size.fail(cat("constant '", value.name, "' (", dtype_name(value.dtype), " ", shape_str(value.shape),
                  ") needs ", expected, " bytes, not ", byte_count));
  }
  if (value.offset % fmt::kAlignment != 0) offset.fail(cat("expected a multiple of ", fmt::kAlignment));
  if (value.offset > blob_size || byte_count > blob_size - value.offset) {
    offset.fail(cat("constant '", value.name, "' (bytes ", value.offset, " to ", value.offset + byte_count,
                    ") lies outside the ", blob_size, "-byte weight blob: the file is truncated or corrupt"));
  }
  return value;
}

// Rebuilds the graph through the Graph API, so shapes are inferred again and checked against the
// file. Values are added in the canonical order the writer uses; other orders are accepted as long as
// every layer reads only what was defined before it.
class GraphLoader {
 public:
  GraphLoader(const JsonField& section, const Sections& sections)
      : name_(section.file()), value_fields_(section["values"].elements()) {
    values_.reserve(value_fields_.size());
    for (const JsonField& field : value_fields_) values_.push_back(parse_value(field, sections.blob_size));
    ids_.assign(values_.size(), -1);
  }

  void add_inputs(const JsonField& list) {
    for (const JsonField& field : list.elements()) {
      const std::size_t id = value_id(field);
      if (values_[id].constant)
        field.fail(cat("value ", id, " ('", values_[id].name, "') is a constant, not an input"));
      if (ids_[id] >= 0) field.fail(cat("value ", id, " is listed twice"));
      ids_[id] = graph_.add_input(values_[id].name, values_[id].shape, values_[id].dtype);
    }
  }

  // Constants view the file's weight blob; the tensors keep the file's buffer alive.
  void add_constants(const FileBuffer& file, const Sections& sections) {
    const std::byte* blob = file.data.get() + sections.blob_offset;
    for (std::size_t id = 0; id < values_.size(); ++id) {
      const FileValue& value = values_[id];
      if (!value.constant) continue;
      Tensor tensor = Tensor::view(value.dtype, value.shape, blob + value.offset, file.data);
      graph_step([&] { ids_[id] = graph_.add_constant(value.name, std::move(tensor)); });
    }
  }

  void add_layer(const JsonField& layer, PlanInfo& info) {
    const JsonField op_field = layer["op"];
    const std::optional<OpKind> op = op_kind_from_name(op_field.as_string());
    if (!op) op_field.fail(cat("unknown operator '", op_field.as_string(), "' (made by a newer kiln?)"));
    const JsonField name_field = layer["name"];
    const std::string& layer_name = name_field.as_string();
    if (!layer_names_.insert(layer_name).second)
      name_field.fail(cat("two layers are named '", layer_name, "'"));
    std::vector<ValueId> inputs = layer_inputs(layer["inputs"], layer_name);
    const JsonField output_field = layer["output"];
    const std::size_t output = value_id(output_field);
    if (ids_[output] >= 0) {
      output_field.fail(cat("value ", output, " is already an input, a constant or another layer's output"));
    }
    const JsonField precision_field = layer["precision"];
    const std::optional<Precision> precision = precision_from_name(precision_field.as_string());
    if (!precision) precision_field.fail(cat("unknown precision '", precision_field.as_string(), "'"));
    Attributes attrs = attributes_from_json(layer["attributes"]);

    ValueId produced = -1;
    graph_step([&] { produced = graph_.add_node(*op, layer_name, std::move(inputs), std::move(attrs)); });
    // The file's name, dtype and shape win over the defaults add_node chose; verify() in finish() checks
    // the shape against inference.
    Value& value = graph_.value(produced);
    value.name = values_[output].name;
    value.dtype = values_[output].dtype;
    value.shape = values_[output].shape;
    graph_.node(value.producer).precision = *precision;
    ids_[output] = produced;
    if (const std::optional<JsonField> data = layer.find("backend_data"))
      info.layer_data[layer_name] = data->json();
  }

  // Every value must have been defined; then the outputs are marked and the whole graph verified.
  Graph finish(const JsonField& outputs) {
    for (std::size_t id = 0; id < values_.size(); ++id) {
      if (ids_[id] < 0) value_fields_[id].fail("not an input, a constant or a layer's output");
    }
    for (const JsonField& field : outputs.elements()) graph_.mark_output(ids_[value_id(field)]);
    graph_step([&] { verify(graph_); });
    return std::move(graph_);
  }

 private:
  std::size_t value_id(const JsonField& field) const {
    if (values_.empty()) field.fail("refers to a value, but the value table is empty");
    const auto last_id = static_cast<std::int64_t>(values_.size()) - 1;
    return static_cast<std::size_t>(field.as_int(0, last_id));
  }

  std::vector<ValueId> layer_inputs(const JsonField& list, const std::string& layer_name) const {
    std::vector<ValueId> inputs;
    for (const JsonField& input : list.elements()) {
      const std::size_t id = value_id(input);
      if (ids_[id] < 0)
        input.fail(cat("layer '", layer_name, "' reads value ", id, " before it is produced"));
      inputs.push_back(ids_[id]);
    }
    return inputs;
  }

  // Graph API errors name the layer but not the file; prefix the file.
  template <typename Step>
  void graph_step(const Step& step) const {
    try {
      step();
    } catch (const Error& error) {
      fail(name_, ": ", error.what());
    }
  }

  std::string name_;
  std::vector<JsonField> value_fields_;
  std::vector<FileValue> values_;
  std::vector<ValueId> ids_;  // file value id -> graph value id
  std::set<std::string> layer_names_;
  Graph graph_;
};

Graph load_graph(const JsonField& section, const FileBuffer& file, const Sections& sections, PlanInfo& info) {
  GraphLoader loader(section, sections);
  loader.add_inputs(section["inputs"]);
  loader.add_constants(file, sections);
  for (const JsonField& layer : section["layers"].elements()) loader.add_layer(layer, info);
  return loader.finish(section["outputs"]);
}

Plan parse_plan(const FileBuffer& file, const std::string& name, const PlanReadOptions& options) {
  const Sections sections = check_container(file, name, options.verify_checksum);

  nlohmann::json header;
  try {
    const auto* text = reinterpret_cast<const char*>(file.data.get() + fmt::kPreambleSize);
    // Free-form sections (quantization, a layer's backend data) are copied recursively below.
    const auto bounded = [&name](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
      require_json_depth(depth, event, name);
      return true;
    };
    header = nlohmann::json::parse(text, text + sections.header_size, bounded);
  } catch (const nlohmann::json::exception& error) {
    fail(name, ": the header is not valid JSON: ", error.what());
  }
  const JsonField root(header, name);
  if (!header.is_object()) root.fail("expected a JSON object");

  const JsonField blob = root["blob"];
  const JsonField alignment = blob["alignment"];
  if (alignment.as_int() != static_cast<std::int64_t>(fmt::kAlignment)) {
    alignment.fail(cat("expected ", fmt::kAlignment));
  }
  const JsonField blob_size = blob["size"];
  if (blob_size.as_int(0) != static_cast<std::int64_t>(sections.blob_size)) {
    blob_size.fail(cat("the header expects a ", blob_size.as_int(0), "-byte weight blob, the file holds ",
                       sections.blob_size, " bytes: it is truncated or corrupt"));
  }

  Plan plan;
  plan.info.format_version = sections.version;
  read_plan_info(root, plan.info, plan.config);
  const std::optional<JsonField> detector = root.find("detector");
  if ((sections.flags & fmt::kDetectorFlag) != 0) {
    plan.detector = detector_section_from_json(root["detector"]);
  } else if (detector) {
    detector->fail("a detector section, but the file's detector flag (0x1) is not set: the file is corrupt");
  }
  plan.graph = load_graph(root["graph"], file, sections, plan.info);
  return plan;
}

}  // namespace

Plan read_plan(const std::filesystem::path& path, const PlanReadOptions& options) {
  const std::string name = path.string();
  return parse_plan(read_file(path, name), name, options);
}

Plan read_plan_bytes(std::span<const std::byte> bytes, const std::string& name,
                     const PlanReadOptions& options) {
  FileBuffer buffer = aligned_buffer(bytes.size());
  std::copy(bytes.begin(), bytes.end(), const_cast<std::byte*>(buffer.data.get()));
  return parse_plan(buffer, name, options);
}

}  // namespace kiln
