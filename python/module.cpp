// The extension module kiln._kiln: its exceptions, kiln.backends() and the other files' registrations.
#include <pybind11/stl.h>

#include "py_arrays.h"
#include "py_module.h"
#include "backends/backend.h"

PYBIND11_MODULE(_kiln, m) {
  namespace py = pybind11;
  m.doc() = "kiln's engines from Python (see the kiln package)";
  m.attr("__version__") = KILN_VERSION;
  // Registered base first: pybind11 tries the newest translator first, so subclasses win.
  auto& error = py::register_exception<kiln::Error>(m, "Error", PyExc_RuntimeError);
  error.attr("__doc__") = "A kiln failure, with the one-line message the kiln command prints.";
  py::register_exception<kiln::embed::InvalidArgument>(m, "InvalidArgumentError", error.ptr());
  py::register_exception<kiln::embed::NotFound>(m, "NotFoundError", error.ptr());
  py::register_exception<kiln::embed::Unsupported>(m, "UnsupportedError", error.ptr());
  m.def(
      "backends",
      [] {
        std::vector<std::string> names;
        for (const auto name : kiln::backend_names()) names.emplace_back(name);
        return names;
      },
      "The backends offered here, the default first (cuda where its plugin, libkiln_cuda.so, is installed).");
  kiln::python::add_device_array(m);
  kiln::python::add_engine(m);
  kiln::python::add_build(m);
}
