#include "core/tensor.h"

#include <cstring>

#include "core/error.h"

namespace kiln {

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t count = 1;
  for (const auto extent : shape) count *= extent;
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

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (const auto extent : shape_) require(extent >= 0, "tensor shape ", shape_str(shape_), " has a negative extent");
  // At least one byte, so that an empty tensor still has storage and is distinguishable from "none".
  const std::size_t size = std::max<std::size_t>(nbytes(), 1);
  std::shared_ptr<std::byte[]> owned(new std::byte[size]());
  data_ = owned.get();
  storage_ = std::shared_ptr<const void>(owned, owned.get());
  writable_ = true;
}

Tensor Tensor::view(DType dtype, Shape shape, const void* data, std::shared_ptr<const void> keep_alive) {
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
  require(static_cast<std::int64_t>(values.size()) == tensor.numel(), "from_f32: ", values.size(),
          " values for shape ", shape_str(tensor.shape()));
  std::memcpy(tensor.data_, values.data(), values.size_bytes());
  return tensor;
}

std::byte* Tensor::mutable_bytes() {
  require(writable_, "tensor is a read-only view; clone() it before writing");
  return data_;
}

std::span<const float> Tensor::f32() const {
  require(dtype_ == DType::kF32, "expected an f32 tensor, got ", dtype_name(dtype_));
  return {data<float>(), static_cast<std::size_t>(numel())};
}

std::span<float> Tensor::mutable_f32() {
  require(dtype_ == DType::kF32, "expected an f32 tensor, got ", dtype_name(dtype_));
  return {mutable_data<float>(), static_cast<std::size_t>(numel())};
}

namespace {

double load_as_double(DType dtype, const std::byte* element) {
  switch (dtype) {
    case DType::kF64: { double v; std::memcpy(&v, element, 8); return v; }
    case DType::kF32: { float v; std::memcpy(&v, element, 4); return v; }
    case DType::kF16: { std::uint16_t v; std::memcpy(&v, element, 2); return f16_to_f32(v); }
    case DType::kBF16: { std::uint16_t v; std::memcpy(&v, element, 2); return bf16_to_f32(v); }
    case DType::kF8E4M3: return e4m3_to_f32(static_cast<std::uint8_t>(*element));
    case DType::kI64: { std::int64_t v; std::memcpy(&v, element, 8); return static_cast<double>(v); }
    case DType::kI32: { std::int32_t v; std::memcpy(&v, element, 4); return v; }
    case DType::kI16: { std::int16_t v; std::memcpy(&v, element, 2); return v; }
    case DType::kI8: return static_cast<std::int8_t>(*element);
    case DType::kU8: return static_cast<std::uint8_t>(*element);
    case DType::kBool: return *element != std::byte{0} ? 1.0 : 0.0;
  }
  return 0.0;
}

void store_from_double(DType dtype, double value, std::byte* element) {
  switch (dtype) {
    case DType::kF64: std::memcpy(element, &value, 8); return;
    case DType::kF32: { const auto v = static_cast<float>(value); std::memcpy(element, &v, 4); return; }
    case DType::kF16: { const auto v = f32_to_f16(static_cast<float>(value)); std::memcpy(element, &v, 2); return; }
    case DType::kBF16: { const auto v = f32_to_bf16(static_cast<float>(value)); std::memcpy(element, &v, 2); return; }
    case DType::kF8E4M3: *element = static_cast<std::byte>(f32_to_e4m3(static_cast<float>(value))); return;
    case DType::kI64: { const auto v = static_cast<std::int64_t>(value); std::memcpy(element, &v, 8); return; }
    case DType::kI32: { const auto v = static_cast<std::int32_t>(value); std::memcpy(element, &v, 4); return; }
    case DType::kI16: { const auto v = static_cast<std::int16_t>(value); std::memcpy(element, &v, 2); return; }
    case DType::kI8: *element = static_cast<std::byte>(static_cast<std::int8_t>(value)); return;
    case DType::kU8: *element = static_cast<std::byte>(static_cast<std::uint8_t>(value)); return;
    case DType::kBool: *element = static_cast<std::byte>(value != 0.0 ? 1 : 0); return;
  }
}

}  // namespace

Tensor Tensor::to(DType dtype) const {
  Tensor result(dtype, shape_);
  const std::size_t in_size = dtype_size(dtype_);
  const std::size_t out_size = dtype_size(dtype);
  const auto count = static_cast<std::size_t>(numel());
  // f64 -> f32 -> narrower would round twice; the f32 path is exact for every source but f64, and
  // f64 sources narrow to f32 first only when the target is f32 itself.
  for (std::size_t i = 0; i < count; ++i) {
    store_from_double(dtype, load_as_double(dtype_, data_ + i * in_size), result.data_ + i * out_size);
  }
  return result;
}

Tensor Tensor::reshaped(Shape shape) const {
  require(shape_numel(shape) == numel(), "cannot reshape ", shape_str(shape_), " to ", shape_str(shape));
  Tensor tensor = *this;
  tensor.shape_ = std::move(shape);
  return tensor;
}

Tensor Tensor::clone() const {
  Tensor copy(dtype_, shape_);
  if (nbytes() != 0) std::memcpy(copy.data_, data_, nbytes());
  return copy;
}

}  // namespace kiln
