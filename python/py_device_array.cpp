// kiln.DeviceArray: device memory kiln allocates for the outputs of a device run, handed to Python
// through __cuda_array_interface__ (torch.as_tensor(a, device="cuda"), cupy.asarray(a), numba).
#include "py_arrays.h"

namespace kiln::python {

namespace {

class DeviceArray {
 public:
  // The device outlives the array (backends/device.h), whichever engine made it.
  DeviceArray(const Device& device, Shape shape, void* stream)
      : device_(device), shape_(std::move(shape)), stream_(stream) {
    bytes_ = static_cast<std::size_t>(shape_numel(shape_)) * sizeof(float);
    data_ = device_.allocate(bytes_);
  }
  ~DeviceArray() { device_.release(data_); }  // after the work still using it
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  py::dict interface() const {
    py::dict d;
    d["shape"] = py::tuple(py::cast(shape_));
    d["typestr"] = "<f4";
    d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(data_), false);
    d["strides"] = py::none();
    d["version"] = 3;
    // Consumers wait for the stream the run was enqueued on (1: the legacy default stream).
    const auto stream = reinterpret_cast<std::uintptr_t>(stream_);
    d["stream"] = stream == 0 ? 1 : stream;
    return d;
  }

  // A host copy, after the stream that writes the array has finished.
  py::array_t<float> to_numpy() const {
    py::array_t<float> host(shape_);
    py::gil_scoped_release release;
    device_.copy_to_host(host.mutable_data(), data_, bytes_, stream_, "copying a device array to the host");
    device_.synchronize(stream_, "copying a device array to the host");
    return host;
  }

  const Shape& shape() const { return shape_; }

 private:
  const Device& device_;
  Shape shape_;
  void* stream_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace

void add_device_array(py::module_& module) {
  py::class_<DeviceArray>(
      module, "DeviceArray",
      "Device memory kiln allocated for a device run's output (float32, C-contiguous). Hand "
      "it to PyTorch, CuPy or numba through __cuda_array_interface__, or copy it with "
      "to_numpy().")
      .def_property_readonly("__cuda_array_interface__", &DeviceArray::interface)
      .def_property_readonly("shape", [](const DeviceArray& a) { return py::tuple(py::cast(a.shape())); })
      .def("to_numpy", &DeviceArray::to_numpy, "A host copy (waits for the run's stream).");
}

py::object new_device_array(const Device& device, const Shape& shape, void* stream) {
  return py::cast(std::make_unique<DeviceArray>(device, shape, stream));
}

}  // namespace kiln::python
