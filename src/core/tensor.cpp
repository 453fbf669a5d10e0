#include "core/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "core/error.h"

namespace kiln {

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t count = 1;
  for (const auto extent : shape) {
    if (__builtin_mul_overflow(count, extent, &count)) fail("shape ", shape_str(shape),
            " has more elements than an int64 can count");
  }
  return count;
}

std::string shape_str(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

namespace {

void check_extents(const Shape& shape) {
  // if + fail rather than require: require would format the message for every dimension.
  for (const auto extent : shape) {
    if (extent < 0) fail("tensor shape ", shape_str(shape), " has a negative extent; expected sizes >= 0");
  }
}

}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  check_extents(shape_);
  const auto count = static_cast<std::uint64_t>(numel());
  if (count > std::numeric_limits<std::size_t>::max() / dtype_size(dtype_)) {
    fail("tensor shape ", shape_str(shape_), " of ", dtype_name(dtype_), " needs more bytes than memory can address");
  }
  // At least one byte, so that an empty tensor still has storage and is distinguishable from "none".
  const std::size_t size = std::max<std::size_t>(nbytes(), 1);
  std::shared_ptr<std::byte[]> owned(new std::byte[size]());
  data_ = owned.get();
  storage_ = std::shared_ptr<const void>(owned, owned.get());
  writable_ = true;
}

Tensor Tensor::view(DType dtype, Shape shape, const void* data, std::shared_ptr<const void> keep_alive) {
  check_extents(shape);
  shape_numel(shape);  // throws on a count that overflows
  if (data == nullptr) fail("tensor view of shape ", shape_str(shape), " has no data; expected a pointer");
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  tensor.storage_ = std::move(keep_alive);
  tensor.data_ = const_cast<std::byte*>(static_cast<const std::byte*>(data));
  tensor.writable_ = false;
  return tensor;
}

Tensor Tensor::from_f32(Shape shape, std::span<const float> values) {
  Tensor tensor(DType::kF32, std::move(shape));
  if (static_cast<std::int64_t>(values.size()) != tensor.numel()) fail("from_f32: ", values.size(),
          " values for shape ", shape_str(tensor.shape()), "; expected ", tensor.numel());
  if (!values.empty()) std::memcpy(tensor.data_, values.data(), values.size_bytes());
  return tensor;
}

std::byte* Tensor::mutable_bytes() {
  require(!empty(), "tensor has no data; expected a tensor with storage");
  require(writable_, "tensor is a read-only view; clone() it before writing");
  return data_;
}

std::span<const float> Tensor::f32() const {
  require(!empty(), "tensor has no data; expected an f32 tensor");
  require(dtype_ == DType::kF32, "expected an f32 tensor, got ", dtype_name(dtype_));
  return {data<float>(), static_cast<std::size_t>(numel())};
}

std::span<float> Tensor::mutable_f32() {
  require(!empty(), "tensor has no data; expected an f32 tensor");
  require(dtype_ == DType::kF32, "expected an f32 tensor, got ", dtype_name(dtype_));
  return {mutable_data<float>(), static_cast<std::size_t>(numel())};
}

namespace {

bool is_integer(DType dtype) { return !dtype_is_float(dtype); }  // bool counts as an integer 0/1

template <typename T>
T load(const std::byte* element) {
  T value;
  std::memcpy(&value, element, sizeof(T));
  return value;
}

template <typename T>
void store(std::byte* element, T value) {
  std::memcpy(element, &value, sizeof(T));
}

// Every float format widens to f64 exactly.
double load_float(DType dtype, const std::byte* element) {
  switch (dtype) {
    case DType::kF64:
      return load<double>(element);
    case DType::kF32:
      return load<float>(element);
    case DType::kF16:
      return f16_to_f32(load<std::uint16_t>(element));
    case DType::kBF16:
      return bf16_to_f32(load<std::uint16_t>(element));
    case DType::kF8E4M3:
      return e4m3_to_f32(load<std::uint8_t>(element));
    default:
      break;
  }
  fail("internal: ", dtype_name(dtype), " is not a float dtype");
}

std::int64_t load_integer(DType dtype, const std::byte* element) {
  switch (dtype) {
    case DType::kI64:
      return load<std::int64_t>(element);
    case DType::kI32:
      return load<std::int32_t>(element);
    case DType::kI16:
      return load<std::int16_t>(element);
    case DType::kI8:
      return load<std::int8_t>(element);
    case DType::kU8:
      return load<std::uint8_t>(element);
    case DType::kBool:
      return load<std::uint8_t>(element) != 0 ? 1 : 0;
    default:
      break;
  }
  fail("internal: ", dtype_name(dtype), " is not an integer dtype");
}

// Range of an integer dtype as [low, high].
std::pair<std::int64_t, std::int64_t> integer_range(DType dtype) {
  switch (dtype) {
    case DType::kI64:
      return {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
    case DType::kI32:
      return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
    case DType::kI16:
      return {std::numeric_limits<std::int16_t>::min(), std::numeric_limits<std::int16_t>::max()};
    case DType::kI8:
      return {std::numeric_limits<std::int8_t>::min(), std::numeric_limits<std::int8_t>::max()};
    case DType::kU8:
      return {0, std::numeric_limits<std::uint8_t>::max()};
    case DType::kBool:
      return {0, 1};
    default:
      break;
  }
  fail("internal: ", dtype_name(dtype), " is not an integer dtype");
}

// Stores an integer already checked to be in the target's range (bool takes any value as != 0).
void store_integer(DType dtype, std::int64_t value, std::byte* element) {
  switch (dtype) {
    case DType::kI64:
      return store(element, value);
    case DType::kI32:
      return store(element, static_cast<std::int32_t>(value));
    case DType::kI16:
      return store(element, static_cast<std::int16_t>(value));
    case DType::kI8:
      return store(element, static_cast<std::int8_t>(value));
    case DType::kU8:
      return store(element, static_cast<std::uint8_t>(value));
    case DType::kBool:
      return store(element, static_cast<std::uint8_t>(value != 0 ? 1 : 0));
    default:
      break;
  }
  fail("internal: ", dtype_name(dtype), " is not an integer dtype");
}

void store_rounded_bits(DType dtype, std::uint32_t bits, std::byte* element) {
  if (dtype_size(dtype) == 4) return store(element, bits);
  if (dtype_size(dtype) == 2) return store(element, static_cast<std::uint16_t>(bits));
  store(element, static_cast<std::uint8_t>(bits));
}

void convert_float(DType from, DType to, const std::byte* in, std::byte* out) {
  const double value = load_float(from, in);
  switch (to) {
    case DType::kF64:
      return store(out, value);
    case DType::kF32:
      return store(out, f64_to_f32(value));
    case DType::kF16:
      return store(out, f64_to_f16(value));
    case DType::kBF16:
      return store(out, f64_to_bf16(value));
    case DType::kF8E4M3:
      return store(out, f64_to_e4m3(value));
    case DType::kBool:
      return store(out, static_cast<std::uint8_t>(value != 0.0 ? 1 : 0));  // NaN is true
    default:
      break;
  }
  // Float to integer truncates toward zero, as C++ does, but only where the result exists.
  const auto [low, high] = integer_range(to);
  const double truncated = std::trunc(value);
  // high + 1 is a power of two, so exact in f64 even for i64 where high itself is not.
  const double high_end = static_cast<double>(high / 2 + 1) * 2.0;
  require(truncated >= static_cast<double>(low) && truncated < high_end, "cannot convert ", dtype_name(from),
          " value ", value, " to ", dtype_name(to), ": expected a finite value in [", low, ", ", high, "]");
  store_integer(to, static_cast<std::int64_t>(truncated), out);
}

void convert_integer(DType from, DType to, const std::byte* in, std::byte* out) {
  const std::int64_t value = load_integer(from, in);
  switch (to) {
    case DType::kF64:
      return store(out, static_cast<double>(value));  // one correctly rounded step
    case DType::kBool:
      return store(out, static_cast<std::uint8_t>(value != 0 ? 1 : 0));
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kF8E4M3: {
      // The magnitude of INT64_MIN does not fit int64_t, but does fit uint64_t.
      const std::uint64_t magnitude =
          value < 0 ? ~static_cast<std::uint64_t>(value) + 1 : static_cast<std::uint64_t>(value);
      return store_rounded_bits(to, round_exact_to_bits(to, value < 0, magnitude, 0), out);
    }
    default:
      break;
  }
  const auto [low, high] = integer_range(to);
  require(value >= low && value <= high, "cannot convert ", dtype_name(from), " value ", value, " to ",
          dtype_name(to), ": expected a value in [", low, ", ", high, "]");
  store_integer(to, value, out);
}

}  // namespace

Tensor Tensor::to(DType dtype) const {
  if (empty()) return {};
  Tensor result(dtype, shape_);
  if (dtype == dtype_) {
    if (nbytes() != 0) std::memcpy(result.data_, data_, nbytes());
    return result;
  }
  const std::size_t in_size = dtype_size(dtype_);
  const std::size_t out_size = dtype_size(dtype);
  const auto count = static_cast<std::size_t>(numel());
  // Each element is rounded once, straight from its exact source value: f64 and i64 sources never
  // pass through f32 on the way to a narrower format.
  for (std::size_t i = 0; i < count; ++i) {
    const std::byte* in = data_ + i * in_size;
    std::byte* out = result.data_ + i * out_size;
    if (is_integer(dtype_)) {
      convert_integer(dtype_, dtype, in, out);
    } else {
      convert_float(dtype_, dtype, in, out);
    }
  }
  return result;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (empty()) fail("cannot reshape a tensor with no data to ", shape_str(shape));
  check_extents(shape);
  const std::int64_t count = shape_numel(shape);
  if (count != numel()) fail("cannot reshape ", shape_str(shape_), " to ", shape_str(shape), ": expected ",
          numel(), " elements, got ", count);
  Tensor tensor = *this;
  tensor.shape_ = std::move(shape);
  return tensor;
}

Tensor Tensor::clone() const {
  if (empty()) return {};
  Tensor copy(dtype_, shape_);
  if (nbytes() != 0) std::memcpy(copy.data_, data_, nbytes());
  return copy;
}

Tensor repeated_batch(const Tensor& item, std::int64_t batch) {
  Shape shape = {batch};
  shape.insert(shape.end(), item.shape().begin(), item.shape().end());
  Tensor out(item.dtype(), shape);
  for (std::int64_t b = 0; b < batch; ++b) {
    std::memcpy(out.mutable_bytes() + static_cast<std::size_t>(b) * item.nbytes(), item.bytes(),
                item.nbytes());
  }
  return out;
}

}  // namespace kiln
