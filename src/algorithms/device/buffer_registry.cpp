#include "algorithms/device/buffer_registry.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <random>

#include "algorithms/device/fd_trade.hpp"
#include "algorithms/device/step_exchange.hpp"
#include "base/error.hpp"
#include "base/logging.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/driver_api.hpp"
#include "cuda/runtime/ipc_allocation.hpp"
#include "cuda/runtime/vmm_allocation.hpp"
#include "transport/cuda_ipc/fd_mailbox.hpp"

namespace braid::device {

using cuda::kernels::kMaxRegistrations;
using cuda::kernels::RegisteredBuffer;

struct BufferRegistry::PeerMemory {
  cuda::IpcMapping ipc;
  cuda::VmmAllocation vmm;
  std::byte* data() const { return static_cast<std::byte*>(ipc.data() != nullptr ? ipc.data() : vmm.data()); }
};

namespace {

enum class Sharing : std::uint32_t { kNone = 0, kIpc = 1, kVmm = 2 };

// What each rank tells the others about the buffer it registers, and at each later step whether that step worked.
struct Offer {
  std::uint32_t ok;
  std::int32_t pid;
  std::uint64_t nonce;
  std::uint64_t ptr;  // the registered range, in the owner's address space
  std::uint64_t bytes;
  std::uint64_t allocation;  // the allocation holding it (what a handle maps), and its length
  std::uint64_t allocationBytes;
  Sharing sharing;
  std::int32_t fd;
  cuda::IpcHandle ipc;
  std::array<char, 160> shareWhy;  // why the buffer cannot be shared with another process (Sharing::kNone)
  std::array<char, 160> why;
};

// Fills in the allocation behind `ptr` and a handle another process can map it with (a cudaIpc handle for
// cudaMalloc memory, a POSIX fd for exportable cuMem memory). Throws for what no peer could use at all.
void describe(Offer& offer, void* ptr, std::size_t bytes, int device) {
  cudaPointerAttributes attr{};
  cuda::checkCuda(cudaPointerGetAttributes(&attr, ptr), "cudaPointerGetAttributes(registered buffer)");
  if (attr.type != cudaMemoryTypeDevice) {
    fail(ErrorCode::kInvalidArgument, {}, "the buffer is not GPU device memory (",
         attr.type == cudaMemoryTypeManaged ? "managed" : "host", " memory cannot be registered)");
  }
  if (attr.device != device) {
    fail(ErrorCode::kInvalidArgument, {}, "the buffer is on GPU ", attr.device, ", the communicator on GPU ", device);
  }
  const cuda::DriverApi& api = cuda::driverApi();
  CUdeviceptr base = 0;
  std::size_t length = 0;
  cuda::checkDriver(api.memGetAddressRange(&base, &length, reinterpret_cast<CUdeviceptr>(ptr)),
                    "cuMemGetAddressRange(registered buffer)");
  const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
  if (begin + bytes > base + length) {
    fail(ErrorCode::kInvalidArgument, {}, "the buffer's ", bytes, " bytes run past the end of its allocation (",
         base + length - begin, " bytes from the pointer): a registration covers one allocation");
  }
  offer.allocation = base;
  offer.allocationBytes = length;
  cudaIpcMemHandle_t handle{};
  const cudaError_t ipc = cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base));
  if (ipc == cudaSuccess) {
    std::memcpy(offer.ipc.data(), &handle, sizeof handle);
    offer.sharing = Sharing::kIpc;
    return;
  }
  (void)cudaGetLastError();
  CUmemGenericAllocationHandle vmm = 0;
  CUresult r = api.memRetainAllocationHandle(&vmm, reinterpret_cast<void*>(base));
  if (r == CUDA_SUCCESS) {
    int fd = -1;
    r = api.memExportToShareableHandle(&fd, vmm, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    api.memRelease(vmm);
    if (r == CUDA_SUCCESS) {
      offer.fd = fd;
      offer.sharing = Sharing::kVmm;
      return;
    }
  }
  offer.sharing = Sharing::kNone;
  std::snprintf(offer.shareWhy.data(), offer.shareWhy.size(), "%s",
                strCat("neither a cudaIpc handle (", cudaGetErrorString(ipc),
                       ") nor a POSIX fd of cuMem memory can be made for it (memory of cudaMallocAsync pools, or cuMem "
                       "memory made without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, cannot be shared)")
                    .c_str());
}

}  // namespace

BufferRegistry::~BufferRegistry() {
  held_.clear();
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  if (table_ != nullptr) (void)cudaFree(table_);
}

// cudaMemcpy from pageable memory may return before the copy reached the device, and the kernels run on other
// streams: a kernel launched right after could read the old entry (seen on the H200: ranks read different tables
// and took different paths). A stream of the registry's own, synchronised, waits for the copy and nothing else.
void BufferRegistry::writeEntry(std::uint32_t index, const RegisteredBuffer& entry) {
  cuda::checkCuda(cudaMemcpyAsync(table_ + index, &entry, sizeof entry, cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpyAsync(registration table)");
  cuda::checkCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(registration table)");
}

std::uint32_t BufferRegistry::add(Engine& host, int rank, int size, int device, void* ptr, std::size_t bytes,
                                  const OpEnv& callEnv) {
  OpEnv env = callEnv;
  env.context.op = "register_buffer";
  // The same index on every rank: the registries change only through these collective calls.
  std::uint32_t index = 0;
  while (own_.count(index) != 0) ++index;

  Offer mine{};
  mine.ok = 1;
  mine.pid = static_cast<std::int32_t>(::getpid());
  mine.nonce = std::random_device{}() | (static_cast<std::uint64_t>(std::random_device{}()) << 32);
  mine.ptr = reinterpret_cast<std::uintptr_t>(ptr);
  mine.bytes = bytes;
  mine.fd = -1;
  try {
    if (index >= kMaxRegistrations) {
      fail(ErrorCode::kInvalidArgument, {}, kMaxRegistrations, " buffers are registered already (deregister some)");
    }
    if (table_ == nullptr) {
      void* table = nullptr;
      cuda::checkCuda(cudaMalloc(&table, sizeof(RegisteredBuffer) * kMaxRegistrations),
                      "cudaMalloc(registration table)");
      table_ = static_cast<RegisteredBuffer*>(table);
      cuda::checkCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate(registrations)");
      cuda::checkCuda(cudaMemsetAsync(table_, 0, sizeof(RegisteredBuffer) * kMaxRegistrations, stream_),
                      "cudaMemsetAsync(registration table)");
    }
    describe(mine, ptr, bytes, device);
  } catch (const Error& e) {
    failStep(mine, e.message());
  }
  const transport::FdCloser closeExported(mine.fd);  // after the last exchange: same-process peers import it
  std::string why;
  std::vector<Offer> all = exchangeSteps(host, mine, size, env, &why);
  if (!why.empty()) fail(ErrorCode::kInvalidArgument, env.context, "cannot register the buffer: ", why);

  auto remote = [&](int p) { return all[static_cast<std::size_t>(p)].pid != mine.pid; };
  FdTrade fds;
  {
    std::vector<int> pids;
    std::vector<bool> offers;
    for (const Offer& o : all) {
      pids.push_back(o.pid);
      offers.push_back(o.sharing == Sharing::kVmm);
    }
    if (!fds.open(host, rank, std::move(pids), std::move(offers), all[0].nonce, env, &why)) {
      fail(ErrorCode::kUnavailable, env.context, "cannot register the buffer: ", why);
    }
  }
  Offer step = mine;
  RegisteredBuffer entry{};
  std::vector<std::shared_ptr<PeerMemory>> held;
  try {
    fds.trade(mine.fd, mine.allocationBytes, env);
    for (int p = 0; p < size; ++p) {
      const Offer& o = all[static_cast<std::size_t>(p)];
      const auto at = static_cast<std::size_t>(p);
      entry.bytes[at] = o.bytes;
      if (!remote(p)) {  // this rank, or a rank of this process: the owner's pointer
        entry.base[at] = reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(o.ptr));
        continue;
      }
      if (o.sharing == Sharing::kNone) {
        fail(ErrorCode::kInvalidArgument, env.context, "rank ", p,
             "'s buffer cannot be mapped by another process: ", o.shareWhy.data());
      }
      std::shared_ptr<PeerMemory> memory = mapped_[{p, o.allocation}].lock();
      if (!memory) {
        memory = std::make_shared<PeerMemory>();
        if (o.sharing == Sharing::kIpc) {
          memory->ipc = cuda::IpcMapping::open(o.ipc);
        } else {
          memory->vmm =
              cuda::VmmAllocation::import(fds.fdOf(p, o.fd), static_cast<std::size_t>(o.allocationBytes), device);
        }
        mapped_[{p, o.allocation}] = memory;
      }
      entry.base[at] = memory->data() + (o.ptr - o.allocation);
      held.push_back(std::move(memory));
    }
  } catch (const Error& e) {
    failStep(step, e.message());
  }
  exchangeSteps(host, step, size, env, &why);
  if (!why.empty()) fail(ErrorCode::kUnavailable, env.context, "cannot register the buffer: ", why);

  // The entry is in device memory before this call returns (the next kernel reads it), and no kernel reads a free
  // entry (nothing names it).
  writeEntry(index, entry);
  own_[index] = Own{reinterpret_cast<std::uintptr_t>(ptr), bytes};
  byAddress_[reinterpret_cast<std::uintptr_t>(ptr)] = index;  // a later registration at the same address wins
  held_[index] = std::move(held);
  return index;
}

void BufferRegistry::remove(Engine& host, int size, std::uint32_t index, const OpEnv& callEnv) {
  OpEnv env = callEnv;
  env.context.op = "deregister_buffer";
  Offer step{};
  step.ok = 1;
  const auto found = own_.find(index);
  if (found == own_.end()) failStep(step, strCat("registration ", index + 1, " is not registered"));
  std::string why;
  exchangeSteps(host, step, size, env, &why);
  if (!why.empty()) fail(ErrorCode::kInvalidArgument, env.context, "cannot deregister the buffer: ", why);
  // No peer's kernel reads this rank's buffer any more: every rank is past its own kernels (the caller waited for
  // them), and a peer's kernel ends only after this rank's twin kernel.
  writeEntry(index, RegisteredBuffer{});
  if (auto a = byAddress_.find(found->second.begin); a != byAddress_.end() && a->second == index) byAddress_.erase(a);
  own_.erase(found);
  held_.erase(index);
  for (auto it = mapped_.begin(); it != mapped_.end();) it = it->second.expired() ? mapped_.erase(it) : std::next(it);
}

std::pair<std::uint32_t, std::uint64_t> BufferRegistry::find(const void* ptr, std::size_t bytes) const {
  const auto p = reinterpret_cast<std::uintptr_t>(ptr);
  auto it = byAddress_.upper_bound(p);  // the registration starting at or before p
  if (it == byAddress_.begin()) return {0, 0};
  --it;
  const Own& own = own_.at(it->second);
  const std::uintptr_t offset = p - own.begin;
  if (offset > own.bytes || bytes > own.bytes - offset) return {0, 0};
  return {it->second + 1, offset};
}

}  // namespace braid::device
