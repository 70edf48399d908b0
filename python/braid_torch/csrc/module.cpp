// The extension module: what braid_torch/__init__.py registers with torch.distributed.
#include <pybind11/chrono.h>
#include <torch/extension.h>

#include "braid_backend.hpp"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "braid's torch.distributed backend";
  m.def("create_backend", &braid_torch::BraidBackend::create, "the backend of one process group", py::arg("store"),
        py::arg("rank"), py::arg("size"), py::arg("timeout"));
}
