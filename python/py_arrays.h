// Arrays crossing into kiln: numpy arrays on the host, and on CUDA objects with __cuda_array_interface__
// (numba, CuPy, PyTorch) or __dlpack__ (PyTorch, CuPy, JAX), read without a copy.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // Shape and strides from the interfaces' tuples

#include <optional>

#include "backends/device.h"
#include "sdk/sdk_engine.h"

namespace kiln::python {

namespace py = pybind11;

// A float32 C-contiguous device tensor some Python object holds.
struct DeviceTensor {
  embed::BufferView view;
  py::object owner;  // keeps the producer (or its DLPack capsule) alive for the call
};

// The CUDA stream a `stream` argument names: None (the legacy default stream), an int (a cudaStream_t
// value, as torch.cuda.Stream.cuda_stream gives), or an object with .cuda_stream or .ptr.
void* stream_argument(const py::object& stream);

// `object` as a device tensor when it is CUDA memory (__cuda_array_interface__ or a CUDA __dlpack__),
// else nullopt. Work the producer announced on another stream is waited for on `stream` of `device` (the
// engine's; null on a host engine, which refuses device tensors).
std::optional<DeviceTensor> device_tensor(const py::object& object, void* stream, const Device* device);

// A float32 numpy array of `object` (C-contiguous; any other dtype is an InvalidArgument).
py::array_t<float> host_array(const py::object& object, const char* what);

// Registers kiln.DeviceArray: device memory kiln allocates for outputs, with __cuda_array_interface__.
void add_device_array(py::module_& module);

// A new DeviceArray of `shape` in `device`'s memory, its interface naming `stream` as where it is written.
py::object new_device_array(const Device& device, const Shape& shape, void* stream);

}  // namespace kiln::python
