#include "cuda/runtime/buffer_sharing.hpp"

#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/error.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/driver_api.hpp"

namespace braid::cuda {

BufferLender::BufferLender(std::size_t slots) : slots_(std::max<std::size_t>(slots, 1)) {}

bool BufferLender::lend(const void* p, std::size_t bytes, LentBuffer* out) {
  // One driver call for every fact; for a pointer CUDA does not know it succeeds with every value zero.
  CUmemorytype type{};
  unsigned long long id = 0;
  CUdeviceptr start = 0;
  std::size_t size = 0;
  int legacyIpc = 0;
  CUpointer_attribute what[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE};
  void* values[] = {&type, &id, &start, &size, &legacyIpc};
  const CUresult status = driverApi().pointerGetAttributes(5, what, values, reinterpret_cast<CUdeviceptr>(p));
  if (status != CUDA_SUCCESS || type != CU_MEMORYTYPE_DEVICE || id == 0 || legacyIpc == 0) return false;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  if (at < start || at - start + bytes > size) return false;

  ++clock_;
  auto found = std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.id == id; });
  const bool fresh = found == slots_.end();
  if (fresh) {
    found =
        std::min_element(slots_.begin(), slots_.end(), [](const Slot& a, const Slot& b) { return a.used < b.used; });
    cudaIpcMemHandle_t handle{};
    const cudaError_t got = cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(start));
    if (got != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    found->id = id;
    std::memcpy(found->handle.data(), &handle, sizeof handle);
  }
  found->used = clock_;
  out->id = id;
  out->offset = at - start;
  out->handle = found->handle;
  out->slot = static_cast<std::uint32_t>(found - slots_.begin());
  out->fresh = fresh ? 1 : 0;
  return true;
}

void BufferLender::forget(std::uint32_t slot) {
  if (slot < slots_.size()) slots_[slot] = Slot{};
}

BufferBorrower::BufferBorrower(std::size_t slots)
    : slots_(std::max<std::size_t>(slots, 1)), ids_(std::max<std::size_t>(slots, 1)) {}

BufferBorrower::~BufferBorrower() {
  // Whoever destroys this has waited for the GPU (the engine does before freeing its channel).
  for (Retired& r : retired_) {
    if (r.after != nullptr) (void)cudaEventDestroy(r.after);
  }
}

void BufferBorrower::reap() {
  retired_.erase(std::remove_if(retired_.begin(), retired_.end(),
                                [](Retired& r) {
                                  const cudaError_t state = cudaEventQuery(r.after);
                                  if (state == cudaErrorNotReady) return false;
                                  if (state != cudaSuccess) (void)cudaGetLastError();
                                  (void)cudaEventDestroy(r.after);
                                  r.after = nullptr;
                                  return true;  // the mapping closes as the entry goes
                                }),
                 retired_.end());
}

void BufferBorrower::retire(std::size_t slot, cudaStream_t stream) {
  Retired r;
  r.id = ids_[slot];
  r.mapping = std::move(slots_[slot]);
  ids_[slot] = 0;
  checkCuda(cudaEventCreateWithFlags(&r.after, cudaEventDisableTiming), "cudaEventCreate(lent buffer)");
  const cudaError_t recorded = cudaEventRecord(r.after, stream);
  if (recorded != cudaSuccess) {
    (void)cudaGetLastError();
    (void)cudaStreamSynchronize(stream);  // cannot tell when the old mapping is free: wait for it here
    (void)cudaGetLastError();
    (void)cudaEventDestroy(r.after);
    return;  // r closes its mapping
  }
  retired_.push_back(std::move(r));
}

void BufferBorrower::take(const LentBuffer& b, cudaStream_t stream) {
  if (b.slot >= slots_.size()) {
    fail(ErrorCode::kInternal, {}, "a peer lent a buffer in slot ", b.slot, " of ", slots_.size());
  }
  if (!retired_.empty()) reap();
  if (b.fresh == 0) return;
  // The slot's mapping, and the allocation's own where the lender had forgotten it in another slot, leave once the
  // work queued so far is done.
  for (std::size_t j = 0; j < slots_.size(); ++j) {
    if (slots_[j].data() != nullptr && (j == b.slot || ids_[j] == b.id)) retire(j, stream);
  }
  // A context opens a handle once: a mapping of this allocation still open is closed first, after its work.
  for (Retired& r : retired_) {
    if (r.id != b.id || r.mapping.data() == nullptr) continue;
    (void)cudaEventSynchronize(r.after);
    (void)cudaGetLastError();
    r.mapping = IpcMapping();
  }
  slots_[b.slot] = IpcMapping::open(b.handle, "a peer's buffer");
  ids_[b.slot] = b.id;
}

std::byte* BufferBorrower::at(const LentBuffer& b) const {
  std::byte* base = b.slot < slots_.size() ? static_cast<std::byte*>(slots_[b.slot].data()) : nullptr;
  if (base == nullptr) fail(ErrorCode::kInternal, {}, "a peer's buffer in slot ", b.slot, " is not open here");
  return base + b.offset;
}

}  // namespace braid::cuda
