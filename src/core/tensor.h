// A dense, row-major tensor: a dtype, a shape and shared storage. Storage may be owned memory or a
// view into something kept alive by the same shared pointer (a memory-mapped checkpoint).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace kiln {

using Shape = std::vector<std::int64_t>;

std::int64_t shape_numel(const Shape& shape);  // throws if the count overflows int64
std::string shape_str(const Shape& shape);     // "[1, 3, 224, 224]"

class Tensor {
 public:
  Tensor() = default;
  // Zero-initialised owned storage.
  Tensor(DType dtype, Shape shape);
  // A view of existing bytes; `keep_alive` owns them.
  static Tensor view(DType dtype, Shape shape, const void* data, std::shared_ptr<const void> keep_alive);
  static Tensor from_f32(Shape shape, std::span<const float> values);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(std::size_t axis) const { return shape_.at(axis); }
  std::size_t rank() const { return shape_.size(); }
  std::int64_t numel() const { return shape_numel(shape_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  bool empty() const { return data_ == nullptr; }  // no data at all (default-constructed), not zero-size

  const std::byte* bytes() const { return data_; }
  std::byte* mutable_bytes();  // fails on a read-only view

  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(data_);
  }
  template <typename T>
  T* mutable_data() {
    return reinterpret_cast<T*>(mutable_bytes());
  }

  std::span<const float> f32() const;  // requires dtype kF32
  std::span<float> mutable_f32();

  // Converts element-wise into a new owned tensor. Floats round once from the exact source value
  // (rules of core/dtype.h); to an integer they truncate toward zero and throw if the result is NaN
  // or out of range, as do integers that do not fit a narrower integer. Bool is value != 0.
  // A tensor with no data converts to one with no data.
  Tensor to(DType dtype) const;
  // Same bytes, new shape of equal element count (shares storage, and writability).
  Tensor reshaped(Shape shape) const;
  // An owned, writable copy (of nothing, for a tensor with no data).
  Tensor clone() const;

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::shared_ptr<const void> storage_;
  std::byte* data_ = nullptr;
  bool writable_ = false;
};

// `item` copied `batch` times along a new leading dimension: shape [batch, item's shape...] (a timing
// batch made of one input).
Tensor repeated_batch(const Tensor& item, std::int64_t batch);

}  // namespace kiln
