#include "py_arrays.h"

#include <cstdint>

namespace kiln::python {

namespace {

using embed::InvalidArgument;

// The DLPack ABI (dlpack.h, version 0.8 "legacy" capsules, which every producer still offers).
struct DLDevice {
  std::int32_t device_type;
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
constexpr std::int32_t kDLCuda = 2;
constexpr std::int32_t kDLCudaManaged = 13;
constexpr std::uint8_t kDLFloat = 2;

// Row-major strides in elements, or throws naming `what`.
void require_contiguous(const Shape& shape, const std::vector<std::int64_t>& strides, const char* what) {
  std::int64_t expected = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected)
      throw InvalidArgument(cat(what, ": expected a C-contiguous array"));
    expected *= shape[i];
  }
}

std::size_t float_bytes(const Shape& shape) {
  return static_cast<std::size_t>(shape_numel(shape)) * sizeof(float);
}

// CUDA array interface v2/v3: its `stream` (1: legacy default, 2: per-thread default, else a handle) is
// where the producer wrote the data; kiln's stream waits for it.
void wait_for_producer(const py::object& producer_stream, void* stream, const Device* device) {
  if (producer_stream.is_none() || device == nullptr) return;
  const auto value = producer_stream.cast<std::uintptr_t>();
  require(device->wait_for(stream, reinterpret_cast<void*>(value)),
          "cannot order kiln's stream after the array's stream ", value);
}

std::optional<DeviceTensor> from_cuda_array_interface(const py::object& object, void* stream,
                                                      const Device* device) {
  const py::dict interface = object.attr("__cuda_array_interface__").cast<py::dict>();
  const auto typestr = interface["typestr"].cast<std::string>();
  if (typestr != "<f4")
    throw InvalidArgument(cat("device array: expected float32 ('<f4'), got '", typestr, "'"));
  const Shape shape = interface["shape"].cast<Shape>();
  if (interface.contains("strides") && !interface["strides"].is_none()) {
    std::vector<std::int64_t> strides;
    for (const auto bytes : interface["strides"].cast<std::vector<std::int64_t>>())
      strides.push_back(bytes / 4);
    require_contiguous(shape, strides, "device array");
  }
  const auto data = interface["data"].cast<py::tuple>()[0].cast<std::uintptr_t>();
  if (interface.contains("stream")) wait_for_producer(interface["stream"], stream, device);
  return DeviceTensor{{reinterpret_cast<void*>(data), float_bytes(shape), shape}, object};
}

std::optional<DeviceTensor> from_dlpack(const py::object& object, void* stream) {
  const py::tuple device = object.attr("__dlpack_device__")();
  const auto type = device[0].cast<std::int32_t>();
  if (type != kDLCuda && type != kDLCudaManaged) return std::nullopt;
  // The producer makes its work visible on `stream` before handing the tensor over.
  const auto handle = reinterpret_cast<std::uintptr_t>(stream);
  py::capsule capsule = object.attr("__dlpack__")(py::arg("stream") = handle == 0 ? 1 : handle);
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) throw py::error_already_set();
  const DLTensor& t = managed->dl_tensor;
  if (t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1) {
    throw InvalidArgument("device array: expected float32 (DLPack float, 32 bits, 1 lane)");
  }
  const Shape shape(t.shape, t.shape + t.ndim);
  if (t.strides != nullptr)
    require_contiguous(shape, std::vector<std::int64_t>(t.strides, t.strides + t.ndim), "device array");
  // Consumed: the capsule no longer frees it; a holder of the producer's reference frees it after the call.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  py::capsule keeper(managed, [](void* pointer) {
    auto* tensor = static_cast<DLManagedTensor*>(pointer);
    if (tensor->deleter != nullptr) tensor->deleter(tensor);
  });
  void* data = static_cast<std::byte*>(t.data) + t.byte_offset;
  return DeviceTensor{{data, float_bytes(shape), shape}, py::make_tuple(object, keeper)};
}

}  // namespace

void* stream_argument(const py::object& stream) {
  if (stream.is_none()) return nullptr;
  if (py::hasattr(stream, "cuda_stream"))
    return reinterpret_cast<void*>(stream.attr("cuda_stream").cast<std::uintptr_t>());
  if (py::hasattr(stream, "ptr")) return reinterpret_cast<void*>(stream.attr("ptr").cast<std::uintptr_t>());
  return reinterpret_cast<void*>(stream.cast<std::uintptr_t>());
}

std::optional<DeviceTensor> device_tensor(const py::object& object, void* stream, const Device* device) {
  if (py::hasattr(object, "__cuda_array_interface__")) return from_cuda_array_interface(object, stream, device);
  if (py::hasattr(object, "__dlpack__") && py::hasattr(object, "__dlpack_device__"))
    return from_dlpack(object, stream);
  return std::nullopt;
}

py::array_t<float> host_array(const py::object& object, const char* what) {
  const py::array array = py::array::ensure(object);
  if (!array) throw InvalidArgument(cat(what, ": expected a numpy array or a CUDA array"));
  if (!array.dtype().is(py::dtype::of<float>())) {
    throw InvalidArgument(cat(what, ": expected float32, got ", py::str(array.dtype()).cast<std::string>()));
  }
  return py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
}

}  // namespace kiln::python
