#include "algorithms/device/device_algorithms.hpp"

#include <algorithm>
#include <limits>

#include "cuda/kernels/collective_kernels.hpp"

namespace braid::device {

namespace {

using tuning::Algorithm, tuning::AlgorithmDescriptor, tuning::Collective, tuning::Link, tuning::Schedule;

// Processes sharing a GPU without MPS: every kernel one of them launches after the other's work waits for the GPU's
// compute engine to switch contexts (~200 us on an H200), while copies of 32 KiB and more switch the copy engines
// at little cost. So up to 1 MiB an allreduce goes faster staged through host memory (two copies and a reduction on
// the CPU) than on the shared-GPU path (a copy and a kernel): 2 processes on one H200, staged 22-31 us at 32-64 KiB
// and ~80 us at 1 MiB, shared ~350 us at every size up to 16 MiB (docs/BENCHMARKS.md).
constexpr std::size_t kSharedGpuStagedMaxBytes = 1024 * 1024;
constexpr std::size_t kAnySize = std::numeric_limits<std::size_t>::max();

constexpr const char* kStagedHow =
    "through pinned host memory: copies to the host, the host engine's allreduce, copies back";

AlgorithmDescriptor staged(std::size_t maxBytes, const char* how = kStagedHow) {
  return {.id = Algorithm::kGpuStaged,
          .name = "staged",
          .collective = Collective::kAllreduce,
          .link = Link::kShm,
          .schedule = Schedule::kDirect,
          .maxBytes = maxBytes,
          .modelled = false,
          .how = how};
}

AlgorithmDescriptor shared() {
  return {.id = Algorithm::kGpuShared,
          .name = "shared",
          .collective = Collective::kAllreduce,
          .link = Link::kShm,
          .schedule = Schedule::kDirect,
          .modelled = false,
          .how =
              "ranks share a GPU, whose kernels take turns (no MPS): each copies into its workspace, the host "
              "meets the peers, then each GPU reduces from every workspace, so no kernel waits for another "
              "rank's"};
}

// Braid's kernels, priced on the link the selector's machine names (NVLink or PCIe).
std::vector<AlgorithmDescriptor> kernels(const Settings& settings) {
  std::vector<AlgorithmDescriptor> all = {
      {.id = Algorithm::kGpuLL,
       .name = "ll",
       .collective = Collective::kAllreduce,
       .link = Link::kNvlink,
       .schedule = Schedule::kLL,
       .maxBytes = cuda::kernels::kLlMaxBytes,  // what the LL area holds
       .how = "one-shot through LL lines: data and flag travel in one store, no fence and no flag to wait for, "
              "twice the bytes on the link"},
      {.id = Algorithm::kGpuOneShot,
       .name = "oneshot",
       .collective = Collective::kAllreduce,
       .link = Link::kNvlink,
       .schedule = Schedule::kDirect,
       .how = "every GPU stores its input in every peer's workspace and reduces all n: one synchronisation"},
      {.id = Algorithm::kGpuTwoShot,
       .name = "twoshot",
       .collective = Collective::kAllreduce,
       .link = Link::kNvlink,
       .schedule = Schedule::kTwoShot,
       .minRanks = 2,
       .pipelined = true,
       .how = "reduce-scatter then allgather between the GPUs: each reduces 1/n and sends 2(n-1)/n of the data, "
              "two synchronisations"},
  };
  // What braid tune measured replaces the model's crossovers: LL up to its bound, one-shot up to its own, two-shot
  // above.
  AlgorithmDescriptor& ll = all[0];
  AlgorithmDescriptor& oneShot = all[1];
  AlgorithmDescriptor& twoShot = all[2];
  if (settings.cudaLlMaxBytes != 0) {
    ll.maxBytes = std::min(settings.cudaLlMaxBytes, cuda::kernels::kLlMaxBytes);
    oneShot.minBytes = twoShot.minBytes = ll.maxBytes + 1;
  }
  if (settings.cudaOneshotMaxBytes != 0) {
    oneShot.maxBytes = settings.cudaOneshotMaxBytes;
    twoShot.minBytes = std::max(twoShot.minBytes, settings.cudaOneshotMaxBytes + 1);
  }
  return all;
}

}  // namespace

std::vector<AlgorithmDescriptor> allreduceAlgorithms(const DeviceFacts& facts, const Settings& settings) {
  if (!facts.channel) return {staged(kAnySize)};
  // Staging twice: up to its measured bound ahead of the shared path, and at every size for BRAID_ALGO=staged.
  if (facts.shared && facts.processes) {
    return {staged(kSharedGpuStagedMaxBytes,
                   "processes share a GPU (no MPS): up to 1 MiB the copies to and from host memory cost less than the "
                   "context switch each kernel of the shared path waits for"),
            shared(), staged(kAnySize)};
  }
  if (facts.shared) return {shared(), staged(kAnySize)};
  std::vector<AlgorithmDescriptor> all = kernels(settings);
  all.push_back(staged(kAnySize));
  return all;
}

}  // namespace braid::device
