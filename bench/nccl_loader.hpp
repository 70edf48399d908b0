// NCCL through dlopen, for braid-bench-device: the few entry points the sweeps call, declared from NCCL's stable
// ABI (nccl.h, 2.x) so that no NCCL header is needed to build and braid builds and runs where there is no NCCL.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace braid::bench {

using ncclResult_t = int;
constexpr ncclResult_t ncclSuccess = 0;
struct ncclComm;
using ncclComm_t = ncclComm*;
struct ncclUniqueId {
  char internal[128];
};
enum ncclDataType_t { ncclInt32 = 2, ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9 };
enum ncclRedOp_t { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 };

struct Nccl {
  ncclResult_t (*getUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*commInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*commDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*allReduce)(const void*, void*, std::size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*allGather)(const void*, void*, std::size_t, ncclDataType_t, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*reduceScatter)(const void*, void*, std::size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                cudaStream_t) = nullptr;
  ncclResult_t (*broadcast)(const void*, void*, std::size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*reduce)(const void*, void*, std::size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                         cudaStream_t) = nullptr;
  ncclResult_t (*send)(const void*, std::size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*recv)(void*, std::size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*groupStart)() = nullptr;
  ncclResult_t (*groupEnd)() = nullptr;
  const char* (*errorString)(ncclResult_t) = nullptr;
  ncclResult_t (*getVersion)(int*) = nullptr;
  ncclResult_t (*commRegister)(ncclComm_t, void*, std::size_t, void**) = nullptr;
  ncclResult_t (*commDeregister)(ncclComm_t, void*) = nullptr;
  std::string path;
  bool isBraid = false;  // braid's own libnccl.so.2 (nccl/): NCCL's API on braid, which lets ranks share a GPU
};

/// libnccl.so.2 from BRAID_NCCL_LIBRARY, the loader's path, the CUDA toolkit or a torch wheel's nvidia-nccl; throws
/// std::runtime_error when none loads or one lacks an entry point.
Nccl loadNccl();
/// Throws std::runtime_error naming `what` and NCCL's message unless r is ncclSuccess.
void checkNccl(const Nccl& n, ncclResult_t r, const char* what);
/// The bench's dtype and op names (float32, bfloat16, float16, float64, int32; sum, prod, min, max) in NCCL's enums.
ncclDataType_t ncclType(const std::string& dtype);
ncclRedOp_t ncclOp(const std::string& op);
/// "NCCL 2.28.3" from ncclGetVersion's code.
std::string ncclVersionText(int code);
/// The NCCL_* settings that restrict NCCL's choice of transport, as this run has them ("" when none).
std::string ncclSettings();

}  // namespace braid::bench
