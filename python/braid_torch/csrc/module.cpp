// The extension module: what braid_torch/__init__.py registers with torch.distributed.
#include <pybind11/chrono.h>
#include <torch/extension.h>

#include "braid_backend.hpp"

namespace {

braid_torch::BraidBackend& braidBackendOf(const c10::intrusive_ptr<c10d::Backend>& backend) {
  auto* braid = dynamic_cast<braid_torch::BraidBackend*>(backend.get());
  TORCH_CHECK(braid != nullptr, "braid_torch: the process group's backend is ", backend->getBackendName(),
              ", not braid");
  return *braid;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "braid's torch.distributed backend";
  m.def("create_backend", &braid_torch::BraidBackend::create, "the backend of one process group", py::arg("store"),
        py::arg("rank"), py::arg("size"), py::arg("timeout"));
  // c10d::Backend has abort() and shutdown() from torch 2.7 on; these reach braid's on every version.
  m.def(
      "abort", [](const c10::intrusive_ptr<c10d::Backend>& backend) { braidBackendOf(backend).abort(); },
      py::call_guard<py::gil_scoped_release>(), "ends the backend's pending ops with Aborted", py::arg("backend"));
  m.def(
      "shutdown", [](const c10::intrusive_ptr<c10d::Backend>& backend) { braidBackendOf(backend).shutdown(); },
      py::call_guard<py::gil_scoped_release>(), "frees the backend's communicator after its queued ops",
      py::arg("backend"));
}
