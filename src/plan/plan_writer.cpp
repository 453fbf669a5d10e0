#include "plan/plan_writer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sha256.h"
#include "graph/verifier.h"
#include "io/atomic_file.h"
#include "plan/attributes_json.h"
#include "plan/plan_format.h"
#include "plan/plan_info_json.h"

namespace kiln {

namespace {

// Constants are written as their in-memory bytes, which the format defines as little-endian.
static_assert(std::endian::native == std::endian::little, "plan constants are stored little-endian");

namespace fmt = plan_format;

// The canonical numbering of what goes into the file.
struct Layout {
  std::vector<ValueId> values;         // file value id -> graph value id
  std::vector<ValueId> file_ids;       // graph value id -> file value id, -1 when left out
  std::vector<NodeId> layers;          // live nodes in execution order
  std::vector<std::uint64_t> offsets;  // per file value: blob offset (constants only)
  std::uint64_t blob_size = 0;
};

Layout make_layout(const Graph& graph) {
  Layout layout;
  layout.layers = graph.topological_order();
  std::vector<bool> used(graph.values().size(), false);
  for (const ValueId id : graph.inputs()) used[static_cast<std::size_t>(id)] = true;
  for (const ValueId id : graph.outputs()) used[static_cast<std::size_t>(id)] = true;
  for (const NodeId id : layout.layers) {
    for (const ValueId input : graph.node(id).inputs) used[static_cast<std::size_t>(input)] = true;
  }

  layout.file_ids.assign(graph.values().size(), -1);
  const auto add = [&](ValueId id) {
    layout.file_ids[static_cast<std::size_t>(id)] = static_cast<ValueId>(layout.values.size());
    layout.values.push_back(id);
  };
  for (const ValueId id : graph.inputs()) add(id);
  for (std::size_t i = 0; i < graph.values().size(); ++i) {
    if (used[i] && graph.values()[i].is_constant()) add(static_cast<ValueId>(i));
  }
  for (const NodeId id : layout.layers) add(graph.node(id).output);
  for (std::size_t i = 0; i < graph.values().size(); ++i) {
    require(!used[i] || layout.file_ids[i] >= 0, "value '", graph.values()[i].name,
            "' is used but is not an input, a constant or a live layer's output");
  }

  std::uint64_t cursor = 0;
  for (const ValueId id : layout.values) {
    const Value& value = graph.value(id);
    layout.offsets.push_back(0);
    if (!value.is_constant()) continue;
    require(value.constant.shape() == value.shape && value.constant.dtype() == value.dtype, "constant '",
            value.name, "': its tensor (", dtype_name(value.constant.dtype()), " ",
            shape_str(value.constant.shape()), ") differs from the value (", dtype_name(value.dtype), " ",
            shape_str(value.shape), ")");
    layout.offsets.back() = fmt::align_up(cursor);
    cursor = layout.offsets.back() + value.constant.nbytes();
  }
  layout.blob_size = cursor;
  return layout;
}

// Live layer names must be unique: backend data and reports find layers by name.
void check_layer_names(const Graph& graph, const Layout& layout, const PlanInfo& info) {
  std::set<std::string_view> names;
  for (const NodeId id : layout.layers) {
    const std::string& name = graph.node(id).name;
    require(names.insert(name).second, "two layers are named '", name, "'");
  }
  for (const auto& [name, data] : info.layer_data) {
    require(names.count(name) != 0, "backend data names layer '", name, "', which is not in the graph");
  }
}

nlohmann::json graph_to_json(const Graph& graph, const Layout& layout, const PlanInfo& info) {
  const auto file_id = [&](ValueId id) { return layout.file_ids[static_cast<std::size_t>(id)]; };
  const auto file_ids = [&](const std::vector<ValueId>& ids) {
    nlohmann::json list = nlohmann::json::array();
    for (const ValueId id : ids) list.push_back(file_id(id));
    return list;
  };

  nlohmann::json values = nlohmann::json::array();
  for (std::size_t i = 0; i < layout.values.size(); ++i) {
    const Value& value = graph.value(layout.values[i]);
    nlohmann::json entry = {
        {"name", value.name},
        {"dtype", std::string(safetensors_name(value.dtype))},
        {"shape", value.shape},
    };
    if (value.is_constant())
      entry["data"] = {{"offset", layout.offsets[i]}, {"size", value.constant.nbytes()}};
    values.push_back(std::move(entry));
  }

  nlohmann::json layers = nlohmann::json::array();
  for (const NodeId id : layout.layers) {
    const Node& node = graph.node(id);
    nlohmann::json entry = {
        {"op", std::string(op_kind_name(node.op))},
        {"name", node.name},
        {"inputs", file_ids(node.inputs)},
        {"output", file_id(node.output)},
        {"precision", std::string(precision_name(node.precision))},
    };
    try {
      entry["attributes"] = attributes_to_json(node.attrs);
    } catch (const Error& error) {
      fail("layer '", node.name, "': ", error.what());
    }
    const auto data = info.layer_data.find(node.name);
    if (data != info.layer_data.end()) entry["backend_data"] = data->second;
    layers.push_back(std::move(entry));
  }

  return {
      {"values", std::move(values)},
      {"inputs", file_ids(graph.inputs())},
      {"outputs", file_ids(graph.outputs())},
      {"layers", std::move(layers)},
  };
}

// Writes bytes and hashes them on the way, for the trailer's digest.
class HashedOutput {
 public:
  explicit HashedOutput(std::ostream& out) : out_(out) {}

  void write(const void* data, std::size_t size) {
    const auto bytes = std::span(static_cast<const std::byte*>(data), size);
    out_.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(size));
    hash_.update(bytes);
    written_ += size;
  }
  void pad_to(std::uint64_t offset) {
    static constexpr std::array<std::byte, fmt::kAlignment> kZeros{};
    while (written_ < offset) write(kZeros.data(), std::min<std::uint64_t>(kZeros.size(), offset - written_));
  }
  std::uint64_t written() const { return written_; }
  std::array<std::uint8_t, 32> finish() { return hash_.finish(); }

 private:
  std::ostream& out_;
  Sha256 hash_;
  std::uint64_t written_ = 0;
};

template <typename Unsigned>
std::array<std::byte, sizeof(Unsigned)> little_endian(Unsigned value) {
  std::array<std::byte, sizeof(Unsigned)> bytes{};
  for (std::size_t i = 0; i < sizeof(Unsigned); ++i)
    bytes[i] = static_cast<std::byte>((value >> (8 * i)) & 0xFF);
  return bytes;
}

}  // namespace

void write_plan(std::ostream& out, const Plan& plan, std::string_view name) {
  const Graph& graph = plan.graph;
  Layout layout;
  std::string header_text;
  try {
    verify(graph);
    layout = make_layout(graph);
    check_layer_names(graph, layout, plan.info);
    nlohmann::json header = nlohmann::json::object();
    write_plan_info(plan.info, plan.config, header);
    if (plan.detector) header["detector"] = detector_section_to_json(*plan.detector);
    header["graph"] = graph_to_json(graph, layout, plan.info);
    header["blob"] = {{"alignment", fmt::kAlignment}, {"size", layout.blob_size}};
    header_text = header.dump();  // compact, keys sorted: the same plan gives the same text
  } catch (const Error& error) {
    fail(name, ": cannot write the plan: ", error.what());
  } catch (const nlohmann::json::exception& error) {
    fail(name, ": cannot write the plan: a name or label is not valid UTF-8 (", error.what(), ")");
  }

  HashedOutput file(out);
  file.write(fmt::kMagic.data(), fmt::kMagic.size());
  file.write(little_endian(fmt::kVersion).data(), 4);
  const std::uint32_t flags = plan.detector ? fmt::kDetectorFlag : 0;
  file.write(little_endian(flags).data(), 4);
  file.write(little_endian(static_cast<std::uint64_t>(header_text.size())).data(), 8);
  file.write(header_text.data(), header_text.size());
  const std::uint64_t blob_start = fmt::align_up(file.written());
  file.pad_to(blob_start);
  for (std::size_t i = 0; i < layout.values.size(); ++i) {
    const Value& value = graph.value(layout.values[i]);
    if (!value.is_constant()) continue;
    file.pad_to(blob_start + layout.offsets[i]);
    file.write(value.constant.bytes(), value.constant.nbytes());
  }
  const std::array<std::uint8_t, 32> digest = file.finish();
  out.write(reinterpret_cast<const char*>(digest.data()), digest.size());
  out.write(fmt::kEndMarker.data(), fmt::kEndMarker.size());
  require(out.good(), name, ": write failed (is the disk full?)");
}

void write_plan(const std::filesystem::path& path, const Plan& plan) {
  write_file_atomically(path, [&](std::ostream& out) { write_plan(out, plan, path.string()); });
}

}  // namespace kiln
