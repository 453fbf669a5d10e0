// kiln.load, kiln.Engine (run, classify) and kiln.detector / kiln.Detector (detect).
#include <pybind11/stl.h>

#include <fstream>
#include <iterator>
#include <mutex>

#include "pipeline/model_loading.h"
#include "plan/plan_reader.h"
#include "py_arrays.h"
#include "py_module.h"
#include "sdk/classify.h"
#include "sdk/detect.h"

namespace kiln::python {

namespace {

using embed::InvalidArgument;

// An encoded image: a path (str or os.PathLike) or bytes.
Image image_argument(const py::object& image) {
  if (py::isinstance<py::bytes>(image)) {
    const std::string bytes = image.cast<std::string>();
    return embed::image_from_bytes({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()},
                                   "image");
  }
  const std::filesystem::path path = py::str(image).cast<std::string>();
  std::error_code error;
  if (!std::filesystem::exists(path, error)) throw embed::NotFound(cat(path.string(), ": no such file"));
  return decode_image(path);
}

// One engine and the context Python calls run on (a mutex keeps threads sharing it in turn).
class PyEngine {
 public:
  explicit PyEngine(std::shared_ptr<const embed::SdkEngine> engine)
      : engine_(std::move(engine)), context_(engine_) {}

  const embed::SdkEngine& engine() const { return *engine_; }

  py::list run(const py::object& input, const py::object& out, const py::object& stream) {
    void* cuda_stream = stream_argument(stream);
    if (auto device = device_tensor(input, cuda_stream, engine_->device()))
      return run_device(*device, out, cuda_stream);
    if (!out.is_none()) throw InvalidArgument("out= is for device runs (a CUDA input)");
    const py::array_t<float> array = host_array(input, "input");
    embed::BufferView in{const_cast<float*>(array.data()), static_cast<std::size_t>(array.nbytes()),
                         Shape(array.shape(), array.shape() + array.ndim())};
    py::list results;
    std::vector<embed::BufferView> outs;
    for (const auto& info : engine_->outputs()) {
      py::array_t<float> result(info.shape);
      outs.push_back({result.mutable_data(), info.bytes(), info.shape});
      results.append(result);
    }
    py::gil_scoped_release release;
    const std::lock_guard lock(mutex_);
    context_.run_host(std::span(&in, 1), outs);
    return results;
  }

  // A detector plan's boxes; the detector is compiled from the engine's plan on the first call.
  std::vector<embed::NamedDetection> detect(const Image& image, float min_score) {
    const std::lock_guard lock(mutex_);
    if (!detector_) {
      detector_ =
          std::make_unique<embed::SdkDetector>(engine_->shared_plan(), "engine.detect", detector_settings());
    }
    return detector_->detect(image, min_score);
  }

  py::list classify(const py::object& image, std::size_t top_k) {
    const Image decoded = image_argument(image);
    std::vector<embed::ClassScore> scores;
    {
      py::gil_scoped_release release;
      const std::lock_guard lock(mutex_);
      scores = embed::classify(context_, decoded, top_k);
    }
    py::list found;
    for (const auto& s : scores) {
      found.append(py::dict(py::arg("class") = s.index, py::arg("label") = s.label,
                            py::arg("probability") = s.probability, py::arg("logit") = s.logit));
    }
    return found;
  }

 private:
  py::list run_device(const DeviceTensor& input, const py::object& out, void* stream) {
    const Device* device = engine_->device();
    if (device == nullptr) {
      throw embed::Unsupported(cat("a CUDA array runs on a cuda engine; this one runs on ",
                                   engine_->backend(), ": pass a numpy array"));
    }
    std::vector<DeviceTensor> outputs;
    py::list results;
    if (out.is_none()) {
      for (const auto& info : engine_->outputs()) {
        py::object array = new_device_array(*device, info.shape, stream);
        outputs.push_back(*device_tensor(array, stream, device));
        results.append(array);
      }
    } else {
      for (const py::handle item : out) {
        auto tensor = device_tensor(py::reinterpret_borrow<py::object>(item), stream, device);
        if (!tensor) throw InvalidArgument("out=: expected CUDA arrays");
        outputs.push_back(*tensor);
        results.append(item);
      }
    }
    std::vector<embed::BufferView> outs;
    for (const auto& tensor : outputs) outs.push_back(tensor.view);
    py::gil_scoped_release release;
    const std::lock_guard lock(mutex_);
    context_.run_device(std::span(&input.view, 1), outs, stream);
    return results;
  }

  // The engine's settings for one image at a time.
  embed::EngineSettings detector_settings() const {
    embed::EngineSettings settings = engine_->settings();
    settings.batch = 1;
    return settings;
  }

  std::shared_ptr<const embed::SdkEngine> engine_;
  embed::SdkContext context_;
  std::unique_ptr<embed::SdkDetector> detector_;
  std::mutex mutex_;
};

py::list tensor_list(const std::vector<embed::TensorInfo>& infos) {
  py::list list;
  for (const auto& info : infos) {
    list.append(py::dict(py::arg("name") = info.name, py::arg("shape") = py::tuple(py::cast(info.shape)),
                         py::arg("dtype") = "float32"));
  }
  return list;
}

std::shared_ptr<const Plan> plan_argument(const py::object& plan) {
  if (py::isinstance<py::bytes>(plan)) {
    const std::string bytes = plan.cast<std::string>();
    return std::make_shared<const Plan>(
        read_plan_bytes({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, "<bytes>"));
  }
  const std::filesystem::path path = py::str(plan).cast<std::string>();
  std::error_code error;
  if (!std::filesystem::exists(path, error)) throw embed::NotFound(cat(path.string(), ": no such file"));
  return pipeline::load_plan(path);
}

std::unique_ptr<PyEngine> load(const py::object& plan, const EngineArguments& arguments) {
  auto shared = plan_argument(plan);
  py::gil_scoped_release release;
  return std::make_unique<PyEngine>(
      std::make_shared<const embed::SdkEngine>(std::move(shared), arguments.settings()));
}

py::list box_list(const std::vector<embed::NamedDetection>& found) {
  py::list boxes;
  for (const auto& d : found) {
    boxes.append(py::dict(py::arg("class") = d.class_index, py::arg("name") = d.class_name,
                          py::arg("score") = d.score,
                          py::arg("box") = py::make_tuple(d.x1, d.y1, d.x2, d.y2)));
  }
  return boxes;
}

// kiln.Detector: a detector is used by one thread at a time, and detect() runs without the GIL, so
// Python threads sharing one take turns on its lock.
struct PyDetector {
  explicit PyDetector(std::unique_ptr<embed::SdkDetector> d) : detector(std::move(d)) {}
  std::unique_ptr<embed::SdkDetector> detector;
  std::mutex mutex;
};

py::list detect(PyDetector& d, const py::object& image, float min_score) {
  const Image decoded = image_argument(image);
  std::vector<embed::NamedDetection> found;
  {
    py::gil_scoped_release release;
    const std::lock_guard lock(d.mutex);
    found = d.detector->detect(decoded, min_score);
  }
  return box_list(found);
}

py::list engine_detect(PyEngine& engine, const py::object& image, float min_score) {
  const Image decoded = image_argument(image);
  std::vector<embed::NamedDetection> found;
  {
    py::gil_scoped_release release;
    found = engine.detect(decoded, min_score);
  }
  return box_list(found);
}

}  // namespace

void add_engine(py::module_& m) {
  py::class_<PyEngine>(m, "Engine", "A plan compiled on a backend (kiln.load).")
      .def_property_readonly("backend", [](const PyEngine& e) { return e.engine().backend(); })
      .def_property_readonly("batch", [](const PyEngine& e) { return e.engine().batch(); })
      .def_property_readonly("family", [](const PyEngine& e) { return e.engine().plan().info.family; })
      .def_property_readonly(
          "inputs", [](const PyEngine& e) { return tensor_list(e.engine().inputs()); },
          "The inputs: dicts of name, shape and dtype.")
      .def_property_readonly(
          "outputs", [](const PyEngine& e) { return tensor_list(e.engine().outputs()); },
          "The outputs: dicts of name, shape and dtype.")
      .def("run", &PyEngine::run, py::arg("input"), py::arg("out") = py::none(),
           py::arg("stream") = py::none(),
           "Runs one batch; returns the outputs as a list.\n\n"
           "A numpy float32 array of the input's shape runs on the host and returns numpy arrays. A CUDA\n"
           "array (__cuda_array_interface__ or __dlpack__) on a cuda engine runs on the device without a "
           "host\n"
           "copy, enqueued on `stream` (None: the default stream; an int cudaStream_t or a torch/CuPy "
           "stream)\n"
           "and not waited for; outputs go to `out` (CUDA arrays) or new kiln.DeviceArray objects. Keep the\n"
           "arrays alive until the stream has finished.")
      .def("classify", &PyEngine::classify, py::arg("image"), py::arg("top_k") = 5,
           "Classifies an image file or encoded bytes (JPEG, PNG, WebP) as the plan's preprocessing says; "
           "returns\n"
           "the top k as dicts of class, label, probability and logit, best first.")
      .def(
          "detect", &engine_detect, py::arg("image"), py::arg("min_score") = 0.25f,
          "Detects objects with a detector plan (kiln build yolov10 ...) in an image file or encoded bytes;\n"
          "returns dicts of class, name, score and box (x1, y1, x2, y2 in the image's pixels), best first.\n"
          "The first call compiles the detector (one image at a time).");

  py::class_<PyDetector>(m, "Detector", "A detector family's checkpoint compiled on a backend.")
      .def_property_readonly("backend", [](const PyDetector& d) { return d.detector->backend(); })
      .def_property_readonly("class_names", [](const PyDetector& d) { return d.detector->class_names(); })
      .def("detect", &detect, py::arg("image"), py::arg("min_score") = 0.25f,
           "Detects objects in an image file or encoded bytes; returns dicts of class, name, score and box\n"
           "(x1, y1, x2, y2 in the image's pixels), best first.");

  m.def(
      "load",
      [](const py::object& plan, const py::object& backend, int device, std::int64_t batch, int threads,
         bool strict_backend) {
        return load(plan, EngineArguments{backend, device, batch, threads, strict_backend});
      },
      py::arg("plan"), py::arg("backend") = py::none(), py::arg("device") = 0, py::arg("batch") = 0,
      py::arg("threads") = 0, py::arg("strict_backend") = false,
      "Loads a plan (a .kplan path or its bytes) and compiles it on `backend` ('cpu', 'cpu-reference' or\n"
      "'cuda'; None: the fastest CPU backend) and `device`, for batches of `batch` (0: the plan's).");
  m.def(
      "detector",
      [](const std::string& family, const std::string& checkpoint, const py::object& config,
         const py::object& backend, int device, int threads, bool strict_backend) {
        embed::DetectorSource source{family, checkpoint, std::nullopt};
        if (!config.is_none()) source.config = py::str(config).cast<std::string>();
        const embed::EngineSettings settings =
            EngineArguments{backend, device, 0, threads, strict_backend}.settings();
        py::gil_scoped_release release;
        return std::make_unique<PyDetector>(std::make_unique<embed::SdkDetector>(source, settings));
      },
      py::arg("family"), py::arg("checkpoint"), py::arg("config") = py::none(),
      py::arg("backend") = py::none(), py::arg("device") = 0, py::arg("threads") = 0,
      py::arg("strict_backend") = false,
      "A detector from a detector family's checkpoint (e.g. 'yolov10', model.safetensors) and its "
      "config.json\n"
      "(default: the one beside the checkpoint).");
}

}  // namespace kiln::python
