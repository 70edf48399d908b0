#include "bench/nccl_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace braid::bench {

Nccl loadNccl() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("BRAID_NCCL_LIBRARY")) candidates.emplace_back(env);
  candidates.insert(candidates.end(), {"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2"});
  for (const char* py : {"3.13", "3.12", "3.11", "3.10"}) {
    for (const char* dir : {"/usr/local/lib/python", "/usr/lib/python"}) {
      candidates.push_back(std::string(dir) + py + "/dist-packages/nvidia/nccl/lib/libnccl.so.2");
    }
  }
  for (const auto& c : candidates) {
    void* lib = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) continue;
    Nccl n;
    n.path = c;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
      if (!fn) throw std::runtime_error(c + " has no " + name);
    };
    get(n.getUniqueId, "ncclGetUniqueId");
    get(n.commInitRank, "ncclCommInitRank");
    get(n.commDestroy, "ncclCommDestroy");
    get(n.allReduce, "ncclAllReduce");
    get(n.allGather, "ncclAllGather");
    get(n.reduceScatter, "ncclReduceScatter");
    get(n.broadcast, "ncclBroadcast");
    get(n.reduce, "ncclReduce");
    get(n.send, "ncclSend");
    get(n.recv, "ncclRecv");
    get(n.groupStart, "ncclGroupStart");
    get(n.groupEnd, "ncclGroupEnd");
    get(n.errorString, "ncclGetErrorString");
    get(n.getVersion, "ncclGetVersion");
    get(n.commRegister, "ncclCommRegister");
    get(n.commDeregister, "ncclCommDeregister");
    // braid's error strings send the reader to BRAID_LOG where NCCL's name NCCL_DEBUG.
    n.isBraid = std::string(n.errorString(static_cast<ncclResult_t>(1))).find("BRAID_LOG") != std::string::npos;
    return n;
  }
  throw std::runtime_error("no libnccl.so.2 found (set BRAID_NCCL_LIBRARY)");
}

void checkNccl(const Nccl& n, ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + n.errorString(r));
}

ncclDataType_t ncclType(const std::string& dtype) {
  if (dtype == "float32") return ncclFloat32;
  if (dtype == "bfloat16") return ncclBfloat16;
  if (dtype == "float16") return ncclFloat16;
  if (dtype == "float64") return ncclFloat64;
  return ncclInt32;
}

ncclRedOp_t ncclOp(const std::string& op) {
  if (op == "prod") return ncclProd;
  if (op == "min") return ncclMin;
  if (op == "max") return ncclMax;
  return ncclSum;
}
// "NCCL 2.28.3" from ncclGetVersion's 22803 (2.9 and later: major * 10000 + minor * 100 + patch; before: * 1000 + *
// 100).
std::string ncclVersionText(int code) {
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  const int patch = code % 100;
  return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string ncclSettings() {
  std::string out;
  for (const char* name : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_NVLS_ENABLE", "NCCL_NET", "NCCL_IB_DISABLE",
                           "NCCL_SOCKET_IFNAME", "NCCL_P2P_LEVEL", "NCCL_ALGO", "NCCL_PROTO"}) {
    if (const char* v = std::getenv(name)) out += (out.empty() ? "" : " ") + std::string(name) + "=" + v;
  }
  return out;
}

}  // namespace braid::bench
