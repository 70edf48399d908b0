#include "algorithms/device/device_channel.hpp"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "algorithms/device/fd_trade.hpp"
#include "algorithms/device/step_exchange.hpp"
#include "base/error.hpp"
#include "base/logging.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "topology/link_generation.hpp"
#include "transport/cuda_ipc/fd_mailbox.hpp"

namespace braid::device {

namespace {

using cuda::kernels::Channel;
using cuda::kernels::kFlagStride;
using cuda::kernels::kMaxDeviceRanks;
using cuda::kernels::kProbeOffset;

// How a rank shares its workspace.
enum class Sharing : std::uint32_t { kVmm = 1, kIpc = 2 };

// What each rank tells the others at every step of the connection; `ok` and `why` say whether its step worked.
struct Hello {
  std::uint32_t ok;
  std::int32_t device;
  std::uint64_t nonce;
  std::uint64_t bytes;
  std::int32_t fd;
  std::int32_t pid;
  Sharing sharing;
  std::uint32_t pad;
  std::uint64_t address;  // the workspace's address in its owner's process (cudaIpc ranks of one process use it)
  std::uint64_t process;  // this process's token: pids repeat across containers, the token does not
  std::int32_t ccMajor;   // the GPU's compute capability (its NVLink generation)
  std::int32_t ccMinor;
  std::int32_t pcieGeneration;  // as its link runs now; 0: unknown
  std::int32_t pad2;
  cuda::IpcHandle ipc;
  std::array<char, 16> uuid;
  std::array<char, 160> why;
};

// Drawn once per process: ranks with the same token are threads of one process and share its CUDA context.
std::uint64_t processToken() {
  static const std::uint64_t token =
      std::random_device{}() | (static_cast<std::uint64_t>(std::random_device{}()) << 32) | 1u;
  return token;
}

// The local ordinal of the GPU with this UUID, or -1 when it is not visible here.
int ordinalOf(const std::array<char, 16>& uuid) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return -1;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess && std::memcmp(prop.uuid.bytes, uuid.data(), 16) == 0) {
      return d;
    }
  }
  return -1;
}

// `value` as `digits` lower-case hex digits, as sysfs names PCI devices.
std::string hex(int value, int digits) {
  char text[16];
  std::snprintf(text, sizeof text, "%0*x", digits, static_cast<unsigned>(value));
  return text;
}

// What joins the ranks' GPUs, from what each said of its own: the link's generation is the lowest any rank's GPU
// runs (NVLink's by the architecture, PCIe's as the link runs now), 0 where one of them does not say.
template <typename Hellos>
GpuLinks linksOf(const Hellos& all, bool nvlink) {
  GpuLinks links;
  links.nvlink = nvlink;
  std::vector<std::array<char, 16>> gpus;
  links.generation = -1;
  for (const auto& h : all) {
    if (std::find(gpus.begin(), gpus.end(), h.uuid) == gpus.end()) gpus.push_back(h.uuid);
    const int generation = nvlink ? topology::nvlinkGeneration(h.ccMajor, h.ccMinor) : h.pcieGeneration;
    links.generation = links.generation < 0 ? generation : std::min(links.generation, generation);
  }
  links.generation = std::max(links.generation, 0);
  links.gpus = static_cast<int>(gpus.size());
  return links;
}

// "ranks 0, 2 share GPU 0; ranks 1, 3 share GPU 1" from every rank's GPU UUID (GPUs named by their ordinal here,
// or by UUID where this process does not see them); empty when no two ranks share one.
template <typename Hellos>
std::string sharingOf(const Hellos& all) {
  std::string text;
  std::vector<bool> listed(all.size(), false);
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (listed[r]) continue;
    std::string ranks = strCat(r);
    int count = 1;
    for (std::size_t q = r + 1; q < all.size(); ++q) {
      if (all[q].uuid != all[r].uuid) continue;
      listed[q] = true;
      ranks += strCat(", ", q);
      ++count;
    }
    if (count < 2) continue;
    const int ordinal = ordinalOf(all[r].uuid);
    std::string gpu = strCat(ordinal);
    if (ordinal < 0) {
      char prefix[16];
      std::snprintf(prefix, sizeof prefix, "%02x%02x%02x%02x", static_cast<unsigned char>(all[r].uuid[0]),
                    static_cast<unsigned char>(all[r].uuid[1]), static_cast<unsigned char>(all[r].uuid[2]),
                    static_cast<unsigned char>(all[r].uuid[3]));
      gpu = strCat("GPU-", prefix, "...");
    }
    text += strCat(text.empty() ? "" : "; ", "ranks ", ranks, " share GPU ", gpu);
  }
  return text;
}

}  // namespace

std::unique_ptr<DeviceChannel> DeviceChannel::connect(Engine& host, int rank, int size, int device,
                                                      std::size_t slotBytes, WorkspaceMemory memory,
                                                      const OpEnv& callEnv, std::string* why) {
  const std::string setupOp = strCat(callEnv.context.op, " (cuda_ipc setup)");  // outlives env, which names it
  OpEnv env = callEnv;
  env.context.op = setupOp.c_str();
  std::unique_ptr<DeviceChannel> ch(new DeviceChannel());
  ch->device_ = device;
  Hello mine{};
  mine.ok = 1;
  mine.device = device;
  mine.pid = static_cast<std::int32_t>(::getpid());
  mine.process = processToken();
  mine.fd = -1;
  mine.nonce = std::random_device{}() | (static_cast<std::uint64_t>(std::random_device{}()) << 32);
  if (size > kMaxDeviceRanks) failStep(mine, strCat(size, " ranks: a channel connects at most ", kMaxDeviceRanks));

  // 1. This rank's workspace and control words: cuMem memory with a POSIX fd where the driver can export one,
  // else (or when BRAID_CUDA_MEMORY=ipc) cudaMalloc memory and its cudaIpc handle.
  const std::size_t bytes = cuda::kernels::workspaceBytes(size, slotBytes);
  if (mine.ok) {
    try {
      cudaDeviceProp prop{};
      cuda::checkCuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
      std::memcpy(mine.uuid.data(), prop.uuid.bytes, 16);
      mine.ccMajor = prop.major;
      mine.ccMinor = prop.minor;
      mine.pcieGeneration = topology::pcieGeneration(
          strCat(hex(prop.pciDomainID, 4), ":", hex(prop.pciBusID, 2), ":", hex(prop.pciDeviceID, 2), ".0"));
      std::string vmmWhy = "BRAID_CUDA_MEMORY=ipc";
      if (memory != WorkspaceMemory::kIpc) {
        try {
          ch->own_ = cuda::VmmAllocation::create(bytes, device);
          mine.fd = ch->own_.exportFd();
          mine.sharing = Sharing::kVmm;
        } catch (const Error& e) {
          if (memory == WorkspaceMemory::kVmm) throw;
          ch->own_ = cuda::VmmAllocation();
          vmmWhy = e.message();
        }
      }
      if (mine.sharing != Sharing::kVmm) {
        ch->ownIpc_ = cuda::IpcAllocation::create(bytes, device);
        mine.ipc = ch->ownIpc_.handle();
        mine.sharing = Sharing::kIpc;
        logLine(LogLevel::kInfo, rank, strCat("cuda_ipc: workspace shared through cudaIpc (", vmmWhy, ")"));
      }
      void* base = mine.sharing == Sharing::kVmm ? ch->own_.data() : ch->ownIpc_.data();
      mine.address = reinterpret_cast<std::uintptr_t>(base);
      mine.bytes = mine.sharing == Sharing::kVmm ? ch->own_.bytes() : bytes;  // cuMem rounds up to its granularity
      cuda::checkCuda(cudaMemset(base, 0, bytes), "cudaMemset(workspace)");
      cuda::checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize(workspace)");
      void* control = nullptr;
      cuda::checkCuda(cudaHostAlloc(&control, sizeof(ChannelControl), cudaHostAllocMapped | cudaHostAllocPortable),
                      "cudaHostAlloc(channel control)");
      ch->control_ = static_cast<ChannelControl*>(control);
      std::memset(ch->control_, 0, sizeof(ChannelControl));
    } catch (const Error& e) {
      failStep(mine, e.message());
    }
  }
  // Closed after the last exchange below: same-process peers import this number.
  const transport::FdCloser closeExported(mine.fd);
  std::vector<Hello> all = exchangeSteps(host, mine, size, env, why);
  if (!why->empty()) return nullptr;

  // 2. Every peer's workspace, mapped here. cuMem: same-process peers' fds are valid as they are, other processes
  // send theirs through a Unix socket. cudaIpc: other processes open the handle, the same process uses the owner's
  // pointer.
  Hello step = mine;
  ch->peers_.resize(static_cast<std::size_t>(size));
  ch->peerIpc_.resize(static_cast<std::size_t>(size));
  ch->channel_.ws[rank] = reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(mine.address));
  auto remote = [&](int p) { return all[static_cast<std::size_t>(p)].pid != mine.pid; };
  auto vmm = [&](int p) { return all[static_cast<std::size_t>(p)].sharing == Sharing::kVmm; };
  FdTrade fds;
  {
    std::vector<int> pids;
    std::vector<bool> offers;
    for (const Hello& h : all) {
      pids.push_back(h.pid);
      offers.push_back(h.sharing == Sharing::kVmm);
    }
    if (!fds.open(host, rank, std::move(pids), std::move(offers), all[0].nonce, env, why)) return nullptr;
  }
  bool nvlink = true;
  try {
    fds.trade(mine.fd, mine.bytes, env);
    for (int p = 0; p < size; ++p) {
      if (p == rank) continue;
      const Hello& h = all[static_cast<std::size_t>(p)];
      const int theirs = ordinalOf(h.uuid);
      if (theirs >= 0 && theirs != device) {
        int can = 0;
        cuda::checkCuda(cudaDeviceCanAccessPeer(&can, device, theirs), "cudaDeviceCanAccessPeer");
        if (!can) fail(ErrorCode::kUnavailable, env.context, "GPU ", device, " cannot access GPU ", theirs, " (P2P)");
        int nvlinkPerf = 0;
        // The performance rank of the link: 0 for NVLink between the two, higher through PCIe switches.
        (void)cudaDeviceGetP2PAttribute(&nvlinkPerf, cudaDevP2PAttrPerformanceRank, device, theirs);
        nvlink &= nvlinkPerf == 0;
      } else if (theirs < 0) {
        nvlink = false;  // not visible here: the probe decides whether it works at all
      }
      const auto at = static_cast<std::size_t>(p);
      if (vmm(p)) {
        ch->peers_[at] = cuda::VmmAllocation::import(fds.fdOf(p, h.fd), static_cast<std::size_t>(h.bytes), device);
        ch->channel_.ws[p] = static_cast<std::byte*>(ch->peers_[at].data());
      } else if (remote(p)) {
        ch->peerIpc_[at] = cuda::IpcMapping::open(h.ipc);
        ch->channel_.ws[p] = static_cast<std::byte*>(ch->peerIpc_[at].data());
      } else {
        // The same process: the owner's pointer, reachable from this GPU once peer access is on.
        if (theirs >= 0 && theirs != device) {
          const cudaError_t enabled = cudaDeviceEnablePeerAccess(theirs, 0);
          if (enabled != cudaSuccess) (void)cudaGetLastError();
          if (enabled != cudaSuccess && enabled != cudaErrorPeerAccessAlreadyEnabled) {
            cuda::checkCuda(enabled, "cudaDeviceEnablePeerAccess");
          }
        }
        ch->channel_.ws[p] = reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(h.address));
      }
    }
  } catch (const Error& e) {
    failStep(step, e.message());
  }
  exchangeSteps(host, step, size, env, why);
  if (!why->empty()) return nullptr;

  ch->control_->abortFlag = 0;
  ch->channel_.error = &ch->control_->error;
  ch->channel_.abortFlag = &ch->control_->abortFlag;
  ch->channel_.slotBytes = slotBytes;
  ch->channel_.rank = rank;
  ch->channel_.nranks = size;
  ch->links_ = linksOf(all, nvlink);
  ch->sharing_ = sharingOf(all);
  for (std::size_t a = 0; a < all.size(); ++a) {
    for (std::size_t b = a + 1; b < all.size(); ++b) {
      ch->processesShare_ |= all[a].uuid == all[b].uuid && all[a].process != all[b].process;
    }
  }
  ch->oneContext_ = std::all_of(all.begin(), all.end(),
                                [&](const Hello& h) { return h.process == all[0].process && h.uuid == all[0].uuid; });
  ch->processesOnOneGpu_ = std::all_of(all.begin(), all.end(), [&](const Hello& h) { return h.uuid == all[0].uuid; });
  for (std::size_t a = 0; a < all.size(); ++a) {
    for (std::size_t b = a + 1; b < all.size(); ++b) ch->processesOnOneGpu_ &= all[a].process != all[b].process;
  }

  // 3. The probe: every rank writes each peer's probe word over the link and reads it back; after a barrier each
  // rank checks the words its peers wrote into its own memory.
  const std::uint32_t nonce = static_cast<std::uint32_t>(all[0].nonce);
  try {
    cudaStream_t stream = nullptr;
    cuda::checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate(probe)");
    void* args[] = {&ch->channel_, const_cast<std::uint32_t*>(&nonce)};
    const cudaError_t launched = cudaLaunchKernel(cuda::kernels::probeKernel(), dim3(1), dim3(32), args, 0, stream);
    const cudaError_t synced = launched == cudaSuccess ? cudaStreamSynchronize(stream) : launched;
    (void)cudaStreamDestroy(stream);
    if (synced != cudaSuccess) (void)cudaGetLastError();
    cuda::checkCuda(synced, "the P2P probe kernel");
  } catch (const Error& e) {
    failStep(step, e.message());
  }
  exchangeSteps(host, step, size, env, why);
  if (!why->empty()) return nullptr;
  try {
    std::vector<std::uint64_t> words(static_cast<std::size_t>(size) * kFlagStride / 8);
    cuda::checkCuda(
        cudaMemcpy(words.data(), ch->channel_.ws[rank] + kProbeOffset, words.size() * 8, cudaMemcpyDeviceToHost),
        "cudaMemcpy(probe words)");
    auto expected = [&](int writer, int target) {
      return (static_cast<std::uint64_t>(nonce) << 32) | (static_cast<std::uint64_t>(writer) << 8) |
             static_cast<std::uint64_t>(target);
    };
    const std::size_t perSlot = kFlagStride / 8;
    for (int p = 0; p < size; ++p) {
      if (p == rank) continue;
      if (words[static_cast<std::size_t>(p) * perSlot] != expected(p, rank)) {
        fail(ErrorCode::kUnavailable, env.context, "P2P probe: the word rank ", p, " wrote into GPU ", device,
             "'s memory did not arrive (P2P reported but not working)");
      }
      if (words[static_cast<std::size_t>(rank) * perSlot + static_cast<std::size_t>(p)] != expected(rank, p)) {
        fail(ErrorCode::kUnavailable, env.context, "P2P probe: a word written into rank ", p,
             "'s GPU memory read back wrong");
      }
    }
  } catch (const Error& e) {
    failStep(step, e.message());
  }
  exchangeSteps(host, step, size, env, why);
  if (!why->empty()) return nullptr;
  return ch;
}

DeviceChannel::~DeviceChannel() {
  if (control_ != nullptr) (void)cudaFreeHost(control_);
}

cuda::kernels::KernelError DeviceChannel::lastError() const {
  cuda::kernels::KernelError e{};
  const volatile cuda::kernels::KernelError* src = &control_->error;
  e.code = src->code;
  if (e.code != 0) {
    e.peer = src->peer;
    e.block = src->block;
    e.phase = src->phase;
    e.round = src->round;
  }
  return e;
}

void DeviceChannel::raiseAbort() {
  if (control_ != nullptr) *const_cast<volatile std::uint32_t*>(&control_->abortFlag) = 1;
}

}  // namespace braid::device
