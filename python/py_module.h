// What the files of the Python module share.
#pragma once

#include <pybind11/pybind11.h>

#include "sdk/sdk_engine.h"

namespace kiln::python {

namespace py = pybind11;

// The keyword arguments every engine-making call takes.
struct EngineArguments {
  py::object backend;  // None: the default backend
  int device = 0;
  std::int64_t batch = 0;
  int threads = 0;
  bool strict_backend = false;

  embed::EngineSettings settings() const {
    embed::EngineSettings s;
    if (!backend.is_none()) s.backend = backend.cast<std::string>();
    s.device = device;
    s.batch = batch;
    s.threads = threads;
    s.strict_backend = strict_backend;
    return s;
  }
};

void add_engine(py::module_& m);
void add_build(py::module_& m);  // kiln.build and kiln.study

}  // namespace kiln::python
