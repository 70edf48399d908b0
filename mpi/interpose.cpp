// libbraid_mpi: CUDA-aware collectives for an MPI that has none, through MPI's profiling interface. Loaded before
// libmpi (LD_PRELOAD, or linked first), it defines the MPI_ collectives; a call whose buffers are all host memory
// goes on to the MPI unchanged (PMPI_), a call with GPU (or managed) buffers runs on braid's communicator mirrored
// from the MPI one. Predefined datatypes and ops run on braid's kernels; derived datatypes and other ops are copied
// through host memory and handed to the MPI, correctly if slowly. MPI has no stream: a GPU-buffer call returns
// with its device work finished, as CUDA-aware MPIs promise, and starts after the work on the legacy default stream.
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "braid/braid.hpp"
#include "mirror.hpp"
#include "mpi_types.hpp"

namespace braid::mpi {
namespace {

bool onGpu(const void* p) { return p != nullptr && p != MPI_IN_PLACE && memoryOf(p) != Memory::kHost; }
// Whether braid can run the call itself: every buffer it passes is GPU memory (braid refuses a call mixing host
// with GPU buffers; the MPI takes those, staged).
bool gpuOnly(std::initializer_list<const void*> buffers) {
  for (const void* p : buffers) {
    if (p != nullptr && p != MPI_IN_PLACE && !onGpu(p)) return false;
  }
  return true;
}

// The MPI error code braid's failures are raised with; its string is the last failure's message.
int braidErrorCode() {
  static int code = [] {
    int errorClass = MPI_ERR_OTHER;
    int c = MPI_ERR_OTHER;
    if (PMPI_Add_error_class(&errorClass) == MPI_SUCCESS) PMPI_Add_error_code(errorClass, &c);
    return c;
  }();
  return code;
}

// Runs `body` (a GPU-buffer call); a braid::Error goes to the communicator's error handler with braid's message.
int guarded(MPI_Comm comm, const char* call, const std::function<void()>& body) {
  try {
    body();
    return MPI_SUCCESS;
  } catch (const std::exception& e) {
    const std::string text = std::string(call) + " on GPU buffers (braid): " + e.what();
    static std::mutex mu;
    std::lock_guard lock(mu);
    const int code = braidErrorCode();
    PMPI_Add_error_string(code, text.c_str());
    std::fprintf(stderr, "%s\n", text.c_str());
    PMPI_Comm_call_errhandler(comm, code);
    return code;
  }
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

// MPI promises a finished buffer when the call returns: wait for the legacy default stream, which the call was
// queued on after the work already there.
CallOptions onDefaultStream() { return CallOptions{.stream = nullptr}; }
void finish() { check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize"); }

// The bytes `count` elements of `type` span from the buffer's start (a derived type's holes included).
std::size_t spanOf(MPI_Datatype type, int count) {
  if (count <= 0) return 0;
  MPI_Aint lb = 0;
  MPI_Aint extent = 0;
  MPI_Aint trueLb = 0;
  MPI_Aint trueExtent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  PMPI_Type_get_true_extent(type, &trueLb, &trueExtent);
  if (trueLb < 0) throw std::runtime_error("a datatype with a negative lower bound cannot be staged");
  return static_cast<std::size_t>(trueLb + trueExtent + static_cast<MPI_Aint>(count - 1) * extent);
}

// A GPU buffer's copy in host memory for a call the MPI runs itself: filled from the GPU when the call reads it,
// written back when the call wrote it.
class HostCopy {
 public:
  HostCopy(const void* device, std::size_t bytes, bool fill)
      : device_(device), bytes_(device != nullptr && device != MPI_IN_PLACE ? bytes : 0) {
    host_.resize(bytes_);
    if (fill && bytes_ != 0) check(cudaMemcpy(host_.data(), device, bytes_, cudaMemcpyDefault), "cudaMemcpy(stage)");
  }
  void* data() { return device_ == MPI_IN_PLACE ? MPI_IN_PLACE : host_.data(); }
  void writeBack() {
    if (bytes_ != 0) {
      check(cudaMemcpy(const_cast<void*>(device_), host_.data(), bytes_, cudaMemcpyDefault), "cudaMemcpy(unstage)");
    }
  }

 private:
  const void* device_;
  std::size_t bytes_;
  std::vector<unsigned char> host_;
};

void stagedOnce(const char* call) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard lock(mu);
  if (!said.insert(call).second) return;
  const char* level = std::getenv("BRAID_LOG");
  if (level != nullptr && (std::string(level) == "info" || std::string(level) == "debug")) {
    std::fprintf(stderr,
                 "braid_mpi: %s with a derived datatype or an op braid does not run: staged through host "
                 "memory and the MPI's own %s\n",
                 call, call);
  }
}

int commSize(MPI_Comm comm) {
  int n = 0;
  PMPI_Comm_size(comm, &n);
  return n;
}
int commRank(MPI_Comm comm) {
  int r = 0;
  PMPI_Comm_rank(comm, &r);
  return r;
}

}  // namespace
}  // namespace braid::mpi

using braid::mpi::commRank;
using braid::mpi::commSize;
using braid::mpi::finish;
using braid::mpi::gpuOnly;
using braid::mpi::guarded;
using braid::mpi::HostCopy;
using braid::mpi::onDefaultStream;
using braid::mpi::onGpu;
using braid::mpi::spanOf;
using braid::mpi::stagedOnce;

extern "C" {

/// Present in a process that loaded the interposer (tests and `braid doctor` look for it).
int braid_mpi_interposer_version = 1;

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  if (!onGpu(sendbuf) && !onGpu(recvbuf)) return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  return guarded(comm, "MPI_Allreduce", [&] {
    const auto t = braid::mpi::braidType(type);
    const auto kind = t ? braid::mpi::braidOp(op, *t) : std::nullopt;
    if (kind && gpuOnly({sendbuf, recvbuf})) {
      const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
      braid::mpi::mirrorOf(comm).allreduce(send, recvbuf, static_cast<std::size_t>(count), *t, *kind,
                                           onDefaultStream());
      return finish();
    }
    stagedOnce("MPI_Allreduce");
    const std::size_t bytes = spanOf(type, count);
    HostCopy send(sendbuf, bytes, true);
    HostCopy recv(recvbuf, bytes, sendbuf == MPI_IN_PLACE);
    const int rc = PMPI_Allreduce(send.data(), recv.data(), count, type, op, comm);
    if (rc != MPI_SUCCESS) throw std::runtime_error("PMPI_Allreduce failed");
    recv.writeBack();
  });
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  const bool isRoot = commRank(comm) == root;
  if (!onGpu(sendbuf) && !(isRoot && onGpu(recvbuf))) {
    return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
  }
  return guarded(comm, "MPI_Reduce", [&] {
    const auto t = braid::mpi::braidType(type);
    const auto kind = t ? braid::mpi::braidOp(op, *t) : std::nullopt;
    if (kind && gpuOnly({sendbuf, isRoot ? recvbuf : nullptr})) {
      const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
      braid::mpi::mirrorOf(comm).reduce(send, isRoot ? recvbuf : nullptr, static_cast<std::size_t>(count), *t, *kind,
                                        root, onDefaultStream());
      return finish();
    }
    stagedOnce("MPI_Reduce");
    const std::size_t bytes = spanOf(type, count);
    HostCopy send(sendbuf, bytes, true);
    HostCopy recv(isRoot ? recvbuf : nullptr, bytes, sendbuf == MPI_IN_PLACE);
    if (PMPI_Reduce(send.data(), recv.data(), count, type, op, root, comm) != MPI_SUCCESS) {
      throw std::runtime_error("PMPI_Reduce failed");
    }
    recv.writeBack();
  });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  if (!onGpu(buffer)) return PMPI_Bcast(buffer, count, type, root, comm);
  return guarded(comm, "MPI_Bcast", [&] {
    if (const auto t = braid::mpi::braidType(type)) {
      braid::mpi::mirrorOf(comm).broadcast(buffer, static_cast<std::size_t>(count), *t, root, onDefaultStream());
      return finish();
    }
    stagedOnce("MPI_Bcast");
    HostCopy buf(buffer, spanOf(type, count), commRank(comm) == root);
    if (PMPI_Bcast(buf.data(), count, type, root, comm) != MPI_SUCCESS) throw std::runtime_error("PMPI_Bcast failed");
    buf.writeBack();
  });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  if (!onGpu(sendbuf) && !onGpu(recvbuf)) {
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  return guarded(comm, "MPI_Allgather", [&] {
    const int n = commSize(comm);
    const auto t = braid::mpi::braidType(recvtype);
    if (t && gpuOnly({sendbuf, recvbuf}) &&
        (sendbuf == MPI_IN_PLACE || (sendtype == recvtype && sendcount == recvcount))) {
      const std::size_t count = static_cast<std::size_t>(recvcount);
      const auto* mine = static_cast<const std::byte*>(recvbuf) +
                         static_cast<std::size_t>(commRank(comm)) * count * spanOf(recvtype, 1);
      braid::mpi::mirrorOf(comm).allgather(sendbuf == MPI_IN_PLACE ? mine : sendbuf, recvbuf, count, *t,
                                           onDefaultStream());
      return finish();
    }
    stagedOnce("MPI_Allgather");
    HostCopy send(sendbuf, spanOf(sendtype, sendcount), true);
    HostCopy recv(recvbuf, spanOf(recvtype, recvcount * n), sendbuf == MPI_IN_PLACE);
    if (PMPI_Allgather(send.data(), sendcount, sendtype, recv.data(), recvcount, recvtype, comm) != MPI_SUCCESS) {
      throw std::runtime_error("PMPI_Allgather failed");
    }
    recv.writeBack();
  });
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm) {
  if (!onGpu(sendbuf) && !onGpu(recvbuf)) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
  return guarded(comm, "MPI_Reduce_scatter_block", [&] {
    const int n = commSize(comm);
    const auto t = braid::mpi::braidType(type);
    const auto kind = t ? braid::mpi::braidOp(op, *t) : std::nullopt;
    if (kind && sendbuf != MPI_IN_PLACE && gpuOnly({sendbuf, recvbuf})) {
      braid::mpi::mirrorOf(comm).reduceScatter(sendbuf, recvbuf, static_cast<std::size_t>(recvcount), *t, *kind,
                                               onDefaultStream());
      return finish();
    }
    // MPI's in-place form keeps the input in recvbuf (all n blocks) and leaves the result at its start; braid's
    // in-place form is another layout, so it goes through the MPI too.
    stagedOnce("MPI_Reduce_scatter_block");
    const std::size_t all = spanOf(type, recvcount * n);
    HostCopy send(sendbuf, all, true);
    HostCopy recv(recvbuf, sendbuf == MPI_IN_PLACE ? all : spanOf(type, recvcount), sendbuf == MPI_IN_PLACE);
    if (PMPI_Reduce_scatter_block(send.data(), recv.data(), recvcount, type, op, comm) != MPI_SUCCESS) {
      throw std::runtime_error("PMPI_Reduce_scatter_block failed");
    }
    recv.writeBack();
  });
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  if (!onGpu(sendbuf) && !onGpu(recvbuf)) {
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  return guarded(comm, "MPI_Alltoall", [&] {
    const int n = commSize(comm);
    const auto t = braid::mpi::braidType(recvtype);
    if (t && sendbuf != MPI_IN_PLACE && gpuOnly({sendbuf, recvbuf}) && sendtype == recvtype && sendcount == recvcount) {
      braid::mpi::mirrorOf(comm).alltoall(sendbuf, recvbuf, static_cast<std::size_t>(recvcount), *t, onDefaultStream());
      return finish();
    }
    stagedOnce("MPI_Alltoall");
    HostCopy send(sendbuf, spanOf(sendtype, sendcount * n), true);
    HostCopy recv(recvbuf, spanOf(recvtype, recvcount * n), sendbuf == MPI_IN_PLACE);
    if (PMPI_Alltoall(send.data(), sendcount, sendtype, recv.data(), recvcount, recvtype, comm) != MPI_SUCCESS) {
      throw std::runtime_error("PMPI_Alltoall failed");
    }
    recv.writeBack();
  });
}

}  // extern "C"
