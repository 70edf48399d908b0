// The device path of a braid built without CUDA: device buffers are refused, streams are never touched.
#if !BRAID_WITH_CUDA
#include "algorithms/device/device_engine_factory.hpp"
#include "algorithms/device/stream_handoff.hpp"
#include "base/error.hpp"

namespace braid::device {

std::unique_ptr<Engine> makeDeviceEngine(Engine&, int, int, const Settings&, bool, DevicePolicy, int,
                                         const std::string&) {
  fail(ErrorCode::kUnavailable, {}, "device buffers need a braid built with CUDA (BRAID_WITH_CUDA=ON)");
}

std::string gpuIdentity(int) { return ""; }

void waitForStream(const OpEnv&) {}

std::unique_ptr<StreamHandoff> makeStreamHandoff(int, int) { return nullptr; }

}  // namespace braid::device
#endif
