#include "plan_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <map>

#include "core/sha256.h"
#include "plan/plan_format.h"

namespace kiln::plan_test {

namespace {

namespace fmt = plan_format;

// Deterministic values in [-1, 1) that are not round numbers, so any byte mix-up shows.
Tensor pseudo_random(Shape shape, std::uint32_t seed, float offset = 0.0f) {
  Tensor tensor(DType::kF32, std::move(shape));
  std::uint32_t state = seed * 2654435761u + 12345u;
  for (float& element : tensor.mutable_f32()) {
    state = state * 1664525u + 1013904223u;
    element = static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f + offset;
  }
  return tensor;
}

void fill_info(Plan& plan) {
  PlanInfo& info = plan.info;
  info.kiln_version = "9.8.7-test";
  info.family = "resnest";
  info.backend = "cuda-h200";
  info.precision = Precision::kF16;
  info.opt_level = 3;
  info.batch = 16;
  info.checkpoint_name = "model.safetensors";
  info.checkpoint_sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  info.passes = {"fold_batch_norm", "fuse_activation", "assign_precision"};
  info.backend_options = {{"early-launch", "off"}, {"fp8-gemm", "only"}};
  info.layer_data["conv1"] = {{"layout", "nhwc"}, {"tactic", 17}, {"workspace", 1.5}};
  info.layer_data["fc"] = {{"tactic", "gemm_128x64"}, {"split_k", nullptr}, {"list", {1, 2, 3}}};
  info.quantization = {{"fp8", {{"conv1", {{"input_scale", 0.0125}, {"weight_scale", 0.5}}}}},
                       {"version", 1}};

  ModelConfig& config = plan.config;
  config.architecture = "resnest14d";
  config.num_classes = 5;
  config.label_names = {"tench", "goldfish", "café crème", "great white shark", "日本"};
  config.preprocess.input_size = 9;
  config.preprocess.interpolation = Interpolation::kBicubic;
  config.preprocess.crop_pct = 0.95;
  config.preprocess.crop_mode = "center";
  config.preprocess.mean = {0.5f, 0.25f, 0.125f};
  config.preprocess.std = {0.3f, 0.2f, 0.1f};
}

// Matches values of two graphs as the walk meets them; every pair must agree and stay consistent.
class ValueMatcher {
 public:
  ValueMatcher(const Graph& expected, const Graph& actual)
      : expected_(expected), actual_(actual), pairs_(expected.values().size(), -1) {}

  void match(ValueId e, ValueId a, const std::string& where) {
    ValueId& known = pairs_[static_cast<std::size_t>(e)];
    if (known >= 0) {
      EXPECT_EQ(known, a) << where << ": wired to a different value";
      return;
    }
    known = a;
    const Value& ev = expected_.value(e);
    const Value& av = actual_.value(a);
    EXPECT_EQ(ev.name, av.name) << where;
    EXPECT_EQ(ev.shape, av.shape) << where << " " << ev.name;
    EXPECT_EQ(ev.dtype, av.dtype) << where << " " << ev.name;
    ASSERT_EQ(ev.is_constant(), av.is_constant()) << where << " " << ev.name;
    if (!ev.is_constant()) return;
    EXPECT_EQ(ev.constant.dtype(), av.constant.dtype()) << ev.name;
    EXPECT_EQ(ev.constant.shape(), av.constant.shape()) << ev.name;
    ASSERT_EQ(ev.constant.nbytes(), av.constant.nbytes()) << ev.name;
    EXPECT_EQ(std::memcmp(ev.constant.bytes(), av.constant.bytes(), ev.constant.nbytes()), 0)
        << ev.name << ": constant bytes differ";
  }

 private:
  const Graph& expected_;
  const Graph& actual_;
  std::vector<ValueId> pairs_;
};

}  // namespace

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("kiln_plan_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code error;
  std::filesystem::remove_all(path_, error);
}

std::vector<std::string> TempDir::entries() const {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path_))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

Plan every_op_plan() {
  Plan plan;
  fill_info(plan);
  Graph& g = plan.graph;
  const ValueId x = g.add_input("pixels", {-1, 4, 9, 9});

  ConvAttrs conv;
  conv.kernel = {3, 3};
  conv.stride = {2, 1};
  conv.padding = {1, 2, 0, 1};
  conv.dilation = {1, 2};
  conv.groups = 2;
  conv.activation = Activation::kSilu;
  const ValueId conv_w = g.add_constant("conv1.weight", pseudo_random({12, 2, 3, 3}, 1));
  const ValueId conv_b = g.add_constant("conv1.bias", pseudo_random({12}, 2));
  const ValueId c1 = g.add_node(OpKind::kConv2d, "conv1", {x, conv_w, conv_b}, conv);  // [N, 12, 4, 8]
  g.node(g.value(c1).producer).precision = Precision::kF16;

  std::vector<ValueId> bn_inputs = {c1};
  bn_inputs.push_back(g.add_constant("bn1.weight", pseudo_random({12}, 3)));
  bn_inputs.push_back(g.add_constant("bn1.bias", pseudo_random({12}, 4)));
  bn_inputs.push_back(g.add_constant("bn1.running_mean", pseudo_random({12}, 5)));
  bn_inputs.push_back(g.add_constant("bn1.running_var", pseudo_random({12}, 6, 1.5f)));  // positive
  const ValueId bn = g.add_node(OpKind::kBatchNorm, "bn1", bn_inputs, BatchNormAttrs{1e-3f});
  const ValueId act = g.add_node(OpKind::kActivation, "act1", {bn}, ActivationAttrs{Activation::kSigmoid});
  g.node(g.value(act).producer).precision = Precision::kF8;

  const RadixAttrs radix{3, 2};
  const ValueId rsum = g.add_node(OpKind::kRadixSum, "attn.sum", {act}, radix);  // [N, 4, 4, 8]
  const ValueId gap1 = g.add_node(OpKind::kGlobalAvgPool, "attn.gap", {act});    // [N, 12, 1, 1]
  const ValueId soft = g.add_node(OpKind::kRadixSoftmax, "attn.rsoftmax", {gap1}, radix);
  const ValueId gated = g.add_node(OpKind::kChannelScale, "attn.gate", {act, gap1});  // squeeze-excite style
  const ValueId wsum = g.add_node(OpKind::kRadixWeightedSum, "attn.wsum", {gated, soft}, radix);
  const ValueId sum = g.add_node(OpKind::kAdd, "add", {rsum, wsum}, AddAttrs{Activation::kRelu});
  g.node(g.value(sum).producer).precision = Precision::kF16;

  PoolAttrs max_pool;
  max_pool.kernel = {3, 2};
  max_pool.stride = {2, 2};
  max_pool.padding = {1, 1, 1, 0};
  max_pool.ceil_mode = true;
  max_pool.count_include_pad = false;
  const ValueId mp = g.add_node(OpKind::kMaxPool2d, "maxpool", {sum}, max_pool);  // [N, 4, 3, 5]
  PoolAttrs avg_pool;
  avg_pool.kernel = {2, 2};
  avg_pool.stride = {1, 2};
  avg_pool.padding = {1, 1, 1, 1};
  avg_pool.ceil_mode = true;
  avg_pool.count_include_pad = false;
  const ValueId ap = g.add_node(OpKind::kAvgPool2d, "avgpool", {mp}, avg_pool);  // [N, 4, 4, 3]
  const ValueId gap2 = g.add_node(OpKind::kGlobalAvgPool, "head.gap", {ap});
  const ValueId flat = g.add_node(OpKind::kFlatten, "head.flatten", {gap2});
  // An FP8 classifier: its activation through a quantize point, its weight as E4M3 codes and scales.
  const ValueId fc_in = g.add_node(OpKind::kQuantize, "fc.input_quant", {flat}, QuantizeAttrs{0.0123f});
  const ValueId fc_codes = g.add_constant("fc.weight_fp8", pseudo_random({5, 4}, 7).to(DType::kF8E4M3));
  const ValueId fc_scales = g.add_constant("fc.weight_scale", pseudo_random({5}, 9, 1.5f));
  const ValueId fc_w = g.add_node(OpKind::kDequantize, "fc.weight_dequant", {fc_codes, fc_scales});
  const ValueId fc_b = g.add_constant("fc.bias", pseudo_random({5}, 8));
  const ValueId fc = g.add_node(OpKind::kLinear, "fc", {fc_in, fc_w, fc_b});
  g.node(g.value(fc).producer).precision = Precision::kF8;
  g.mark_output(fc);
  g.mark_output(mp);

  // Detection operators on a branch of their own.
  const ValueId joined = g.add_node(OpKind::kConcat, "det.cat", {sum, sum}, ConcatAttrs{1});  // [N, 8, 4, 8]
  const ValueId part = g.add_node(OpKind::kChannelSlice, "det.slice", {joined}, SliceAttrs{2, 1, 3});
  const ValueId up = g.add_node(OpKind::kUpsample, "det.up", {part}, UpsampleAttrs{3});  // [N, 4, 12, 24]
  g.mark_output(g.add_node(OpKind::kAttention, "det.attn", {up}, AttentionAttrs{1, 1, 2}));
  const ValueId decoded = g.add_node(OpKind::kDetectDecode, "det.decode", {joined}, DetectAttrs{1, 8});
  const ValueId levels =
      g.add_node(OpKind::kConcat, "det.levels", {decoded, decoded}, ConcatAttrs{2});  // [N, 8, 64]
  g.mark_output(
      g.add_node(OpKind::kDetectSelect, "det.select", {levels}, DetectSelectAttrs{5}));  // [N, 5, 6]
  return plan;
}

Plan mixed_dtype_plan() {
  Plan plan;
  fill_info(plan);
  plan.info.layer_data.clear();
  Graph& g = plan.graph;
  const ValueId x = g.add_input("image", {1, 3, 8, 8});
  ConvAttrs conv;
  conv.kernel = {3, 3};
  conv.padding = {1, 1, 1, 1};
  const ValueId w = g.add_constant("conv.weight", pseudo_random({4, 3, 3, 3}, 11).to(DType::kF16));
  const ValueId b = g.add_constant("conv.bias", pseudo_random({4}, 12).to(DType::kBF16));
  const ValueId c = g.add_node(OpKind::kConv2d, "conv", {x, w, b}, conv);
  const ValueId pooled = g.add_node(OpKind::kGlobalAvgPool, "gap", {c});
  const ValueId flat = g.add_node(OpKind::kFlatten, "flatten", {pooled});
  const ValueId fc_w = g.add_constant("fc.weight", pseudo_random({3, 4}, 13).to(DType::kF8E4M3));
  const ValueId fc_b = g.add_constant("fc.bias", pseudo_random({3}, 14));
  g.mark_output(g.add_node(OpKind::kLinear, "fc", {flat, fc_w, fc_b}));
  return plan;
}

void expect_same_graph(const Graph& expected, const Graph& actual) {
  ValueMatcher matcher(expected, actual);
  ASSERT_EQ(expected.inputs().size(), actual.inputs().size());
  for (std::size_t i = 0; i < expected.inputs().size(); ++i) {
    matcher.match(expected.inputs()[i], actual.inputs()[i], "graph input");
  }
  const std::vector<NodeId> expected_order = expected.topological_order();
  const std::vector<NodeId> actual_order = actual.topological_order();
  ASSERT_EQ(expected_order.size(), actual_order.size());
  for (std::size_t i = 0; i < expected_order.size(); ++i) {
    const Node& e = expected.node(expected_order[i]);
    const Node& a = actual.node(actual_order[i]);
    EXPECT_EQ(e.op, a.op) << e.name;
    EXPECT_EQ(e.name, a.name);
    EXPECT_TRUE(e.attrs == a.attrs) << e.name << ": attributes differ";
    EXPECT_EQ(e.precision, a.precision) << e.name;
    EXPECT_FALSE(a.dead) << a.name;
    ASSERT_EQ(e.inputs.size(), a.inputs.size()) << e.name;
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      matcher.match(e.inputs[k], a.inputs[k], "layer '" + e.name + "' input " + std::to_string(k));
    }
    matcher.match(e.output, a.output, "layer '" + e.name + "' output");
  }
  ASSERT_EQ(expected.outputs().size(), actual.outputs().size());
  for (std::size_t i = 0; i < expected.outputs().size(); ++i) {
    matcher.match(expected.outputs()[i], actual.outputs()[i], "graph output");
  }
}

void expect_same_info(const PlanInfo& expected, const PlanInfo& actual) {
  EXPECT_EQ(actual.format_version, kPlanFormatVersion);
  EXPECT_EQ(expected.kiln_version, actual.kiln_version);
  EXPECT_EQ(expected.family, actual.family);
  EXPECT_EQ(expected.backend, actual.backend);
  EXPECT_EQ(expected.precision, actual.precision);
  EXPECT_EQ(expected.opt_level, actual.opt_level);
  EXPECT_EQ(expected.batch, actual.batch);
  EXPECT_EQ(expected.checkpoint_name, actual.checkpoint_name);
  EXPECT_EQ(expected.checkpoint_sha256, actual.checkpoint_sha256);
  EXPECT_EQ(expected.passes, actual.passes);
  EXPECT_EQ(expected.backend_options, actual.backend_options);
  EXPECT_EQ(expected.layer_data, actual.layer_data);
  EXPECT_EQ(expected.quantization, actual.quantization);
}

void expect_same_config(const ModelConfig& expected, const ModelConfig& actual) {
  EXPECT_EQ(expected.architecture, actual.architecture);
  EXPECT_EQ(expected.num_classes, actual.num_classes);
  EXPECT_EQ(expected.label_names, actual.label_names);
  EXPECT_EQ(expected.preprocess.input_size, actual.preprocess.input_size);
  EXPECT_EQ(expected.preprocess.interpolation, actual.preprocess.interpolation);
  EXPECT_EQ(expected.preprocess.crop_pct, actual.preprocess.crop_pct);
  EXPECT_EQ(expected.preprocess.crop_mode, actual.preprocess.crop_mode);
  EXPECT_EQ(expected.preprocess.mean, actual.preprocess.mean);
  EXPECT_EQ(expected.preprocess.std, actual.preprocess.std);
}

std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  // A fresh file: truncating one in place makes ext4 flush it on close, which is slow in a loop.
  std::filesystem::remove(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

namespace {

std::uint64_t header_size_of(const std::vector<std::byte>& file) {
  std::uint64_t size = 0;
  for (std::size_t i = 0; i < 8; ++i) size |= static_cast<std::uint64_t>(file.at(16 + i)) << (8 * i);
  return size;
}

}  // namespace

nlohmann::json header_of(const std::vector<std::byte>& file) {
  const auto* text = reinterpret_cast<const char*>(file.data() + fmt::kPreambleSize);
  return nlohmann::json::parse(text, text + header_size_of(file));
}

std::size_t blob_offset_of(const std::vector<std::byte>& file) {
  return fmt::align_up(fmt::kPreambleSize + header_size_of(file));
}

std::vector<std::byte> with_header(const std::vector<std::byte>& file, const std::string& header_text) {
  const std::size_t blob_offset = blob_offset_of(file);
  std::vector<std::byte> rebuilt(file.begin(), file.begin() + fmt::kPreambleSize);
  const std::uint64_t size = header_text.size();
  for (std::size_t i = 0; i < 8; ++i) rebuilt[16 + i] = static_cast<std::byte>((size >> (8 * i)) & 0xFF);
  for (const char c : header_text) rebuilt.push_back(static_cast<std::byte>(c));
  rebuilt.resize(fmt::align_up(rebuilt.size()), std::byte{0});
  rebuilt.insert(rebuilt.end(), file.begin() + static_cast<std::ptrdiff_t>(blob_offset), file.end());
  reseal(rebuilt);
  return rebuilt;
}

std::vector<std::byte> with_header(const std::vector<std::byte>& file,
                                   const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json header = header_of(file);
  edit(header);
  return with_header(file, header.dump());
}

void reseal(std::vector<std::byte>& file) {
  const std::size_t digest_offset = file.size() - fmt::kTrailerSize;
  Sha256 hash;
  hash.update(std::span(file.data(), digest_offset));
  const auto digest = hash.finish();
  std::memcpy(file.data() + digest_offset, digest.data(), digest.size());
}

}  // namespace kiln::plan_test
