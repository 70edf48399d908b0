// The C ABI (include/braid/braid.h): each function checks what the C types cannot (NULL handles, enum values
// outside their range), calls the C++ API, and turns every exception into a braid_result_t plus a thread-local
// message. Nothing may escape: an exception unwinding into C code is undefined behaviour.
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "braid/braid.h"
#include "braid/braid.hpp"
#include "braid/types.hpp"

// The numbering of the C enums is the C++ enums' (both are part of the ABI).
static_assert(BRAID_ANY_SOURCE == braid::kAnySource);
static_assert(BRAID_SUCCESS == 0);
static_assert(BRAID_ERR_INVALID_ARGUMENT == static_cast<int>(braid::ErrorCode::kInvalidArgument));
static_assert(BRAID_ERR_TIMEOUT == static_cast<int>(braid::ErrorCode::kTimeout));
static_assert(BRAID_ERR_PEER_LOST == static_cast<int>(braid::ErrorCode::kPeerLost));
static_assert(BRAID_ERR_MISMATCH == static_cast<int>(braid::ErrorCode::kMismatch));
static_assert(BRAID_ERR_ABORTED == static_cast<int>(braid::ErrorCode::kAborted));
static_assert(BRAID_ERR_UNAVAILABLE == static_cast<int>(braid::ErrorCode::kUnavailable));
static_assert(BRAID_ERR_INTERNAL == static_cast<int>(braid::ErrorCode::kInternal));

static_assert(BRAID_BOOL == static_cast<int>(braid::DataType::kBool));
static_assert(BRAID_INT8 == static_cast<int>(braid::DataType::kInt8));
static_assert(BRAID_UINT8 == static_cast<int>(braid::DataType::kUint8));
static_assert(BRAID_INT32 == static_cast<int>(braid::DataType::kInt32));
static_assert(BRAID_UINT32 == static_cast<int>(braid::DataType::kUint32));
static_assert(BRAID_INT64 == static_cast<int>(braid::DataType::kInt64));
static_assert(BRAID_UINT64 == static_cast<int>(braid::DataType::kUint64));
static_assert(BRAID_FLOAT16 == static_cast<int>(braid::DataType::kFloat16));
static_assert(BRAID_BFLOAT16 == static_cast<int>(braid::DataType::kBFloat16));
static_assert(BRAID_FLOAT32 == static_cast<int>(braid::DataType::kFloat32));
static_assert(BRAID_FLOAT64 == static_cast<int>(braid::DataType::kFloat64));
static_assert(BRAID_FLOAT8_E4M3 == static_cast<int>(braid::DataType::kFloat8E4M3));
static_assert(BRAID_FLOAT8_E5M2 == static_cast<int>(braid::DataType::kFloat8E5M2));
static_assert(BRAID_NUM_DATATYPES == braid::kNumDataTypes);

static_assert(BRAID_SUM == static_cast<int>(braid::ReduceKind::kSum));
static_assert(BRAID_PROD == static_cast<int>(braid::ReduceKind::kProd));
static_assert(BRAID_MIN == static_cast<int>(braid::ReduceKind::kMin));
static_assert(BRAID_MAX == static_cast<int>(braid::ReduceKind::kMax));
static_assert(BRAID_AVG == static_cast<int>(braid::ReduceKind::kAvg));
static_assert(BRAID_PREMUL_SUM == static_cast<int>(braid::ReduceKind::kPremulSum));
static_assert(BRAID_BAND == static_cast<int>(braid::ReduceKind::kBand));
static_assert(BRAID_BOR == static_cast<int>(braid::ReduceKind::kBor));
static_assert(BRAID_BXOR == static_cast<int>(braid::ReduceKind::kBxor));
static_assert(BRAID_NUM_REDOPS == braid::kNumReduceKinds);

// The int-sized guarantee the *_ENUM_MAX_ enumerators buy, and the id's size.
static_assert(sizeof(braid_result_t) == sizeof(int) && sizeof(braid_datatype_t) == sizeof(int) &&
              sizeof(braid_redop_t) == sizeof(int));
static_assert(sizeof(braid_unique_id_t) == sizeof(braid::UniqueId));

struct braid_comm {
  std::unique_ptr<braid::Communicator> impl;
  std::atomic<CUstream_st*> stream{nullptr};  // braid_comm_set_stream: the CUDA stream of this handle's calls
};

namespace {

using braid::ErrorCode;

// The message braid_last_error returns. `lastMessage` points either into `lastStorage` or at a string literal,
// so recording an error never throws, even when copying the message runs out of memory.
thread_local std::string lastStorage;
thread_local const char* lastMessage = "";

void setLastError(std::string_view message) noexcept {
  try {
    lastStorage.assign(message);
    lastMessage = lastStorage.c_str();
  } catch (...) {
    lastMessage = "out of memory (while recording the error message)";
  }
}

// Runs `body`, converting whatever it throws into a result code and the thread's last error message.
template <typename Body>
braid_result_t guarded(Body&& body) noexcept {
  try {
    body();
    return BRAID_SUCCESS;
  } catch (const braid::Error& e) {
    setLastError(e.what());
    return static_cast<braid_result_t>(e.code());
  } catch (const std::bad_alloc&) {
    setLastError("out of memory");
    return BRAID_ERR_UNAVAILABLE;
  } catch (const std::exception& e) {
    try {
      setLastError(std::string("internal error: ") + e.what());
    } catch (...) {
      setLastError("internal error");
    }
    return BRAID_ERR_INTERNAL;
  } catch (...) {
    setLastError("internal error: an exception that is not a std::exception");
    return BRAID_ERR_INTERNAL;
  }
}

[[noreturn]] void invalid(const char* fn, const std::string& message) {
  braid::ErrorContext context;
  context.op = fn;
  throw braid::Error(ErrorCode::kInvalidArgument, message, context);
}

// The options of a call through this handle: its stream (braid_comm_set_stream).
braid::CallOptions opts(braid_comm_t comm) {
  braid::CallOptions o;
  o.stream = comm->stream.load(std::memory_order_relaxed);
  return o;
}

// A destroyed handle's few bytes, kept for the life of the process with its communicator gone: a call or a second
// braid_comm_destroy on it then reads valid memory that says "destroyed", and fails by name instead of reading
// freed memory. The handles are never reused, so a stale one cannot reach a later communicator.
std::mutex retiredMutex;
std::vector<std::unique_ptr<braid_comm>> retired;

void retire(braid_comm_t comm) {
  const std::lock_guard<std::mutex> lock(retiredMutex);
  retired.emplace_back(comm);
}

constexpr const char* kDestroyed = "comm was destroyed (braid_comm_destroy); a destroyed handle takes no calls";

braid::Communicator& need(braid_comm_t comm, const char* fn) {
  if (comm == nullptr) invalid(fn, "comm is NULL");
  if (comm->impl == nullptr) invalid(fn, kDestroyed);
  return *comm->impl;
}

template <typename T>
void needPointer(const T* pointer, const char* name, const char* fn) {
  if (pointer == nullptr) invalid(fn, std::string(name) + " is NULL");
}

// The int a C caller passed as one of the C enums. Read as bytes, not converted: a C caller may pass any int, and
// in C++ reading an enum object that holds a value outside the enum's range is undefined behaviour (UBSan caught
// braid_send reading -1 as a braid_datatype_t).
template <typename CEnum>
int rawValue(const CEnum& e) {
  static_assert(sizeof(CEnum) == sizeof(int));
  int value;
  std::memcpy(&value, &e, sizeof value);
  return value;
}

// The C enums are int-sized, so a caller can pass any int; the C++ enums are 8 bits wide and would wrap 265 to 9.
bool isType(const braid_datatype_t& type) { return rawValue(type) >= 0 && rawValue(type) < braid::kNumDataTypes; }

std::string notAType(const braid_datatype_t& type) {
  return "datatype " + std::to_string(rawValue(type)) +
         " is not a braid_datatype_t (BRAID_BOOL=0 .. BRAID_FLOAT8_E5M2=" + std::to_string(braid::kNumDataTypes - 1) +
         ")";
}

// A type value the C++ layer refuses in its argument checks (it accepts 0 .. kNumDataTypes-1 only).
constexpr auto kRefusedType = static_cast<braid::DataType>(0xFF);
static_assert(braid::kNumDataTypes <= 0xFF);

// The arguments of one call that the C types cannot constrain, converted to the C++ API's, and the first of them
// that is wrong.
//
// A collective refused here still goes through the C++ call, with a type the C++ layer refuses: that layer then
// meets the peers for one round, so that they fail at once (Mismatch) instead of waiting out BRAID_TIMEOUT, as it
// does for its own argument errors. The caller gets this layer's message with the C++ layer's context (rank and
// sequence number).
class Arguments {
 public:
  explicit Arguments(const char* fn) : fn_(fn) {}

  braid::DataType type(const braid_datatype_t& type) {
    if (isType(type)) return static_cast<braid::DataType>(rawValue(type));
    refuse(notAType(type));
    return kRefusedType;
  }

  braid::ReduceOp op(const braid_redop_t& op) {
    const int value = rawValue(op);
    if (value < 0 || value >= braid::kNumReduceKinds) {
      refuse("reduction op " + std::to_string(value) +
             " is not a braid_redop_t (BRAID_SUM=0 .. BRAID_BXOR=" + std::to_string(braid::kNumReduceKinds - 1) + ")");
      return braid::ReduceOp();
    }
    if (value == BRAID_PREMUL_SUM) {
      refuse("BRAID_PREMUL_SUM needs a scale, which this call cannot take: use braid_allreduce_premul");
    }
    return braid::ReduceOp(static_cast<braid::ReduceKind>(value));
  }

  // A C array of one entry per rank as the vector the C++ API takes.
  std::vector<std::size_t> perRank(const std::size_t* values, const braid::Communicator& comm, const char* name) {
    if (values == nullptr) {
      refuse(std::string(name) + " is NULL");
      return {};
    }
    return std::vector<std::size_t>(values, values + comm.size());
  }

  /// Runs `call(type)`, a collective, with `type` if no argument was refused, else as the class comment says.
  template <typename Call>
  void collective(braid::DataType type, Call&& call) {
    if (refusal_.empty()) {
      call(type);
      return;
    }
    braid::ErrorContext context;
    try {
      call(kRefusedType);
    } catch (const braid::Error& e) {
      context = e.context();
    }
    context.op = fn_;
    throw braid::Error(braid::ErrorCode::kInvalidArgument, refusal_, context);
  }

  /// Throws the refusal, if any (for calls that meet no peers before their checks pass).
  void check() const {
    if (!refusal_.empty()) invalid(fn_, refusal_);
  }

  void refuse(std::string message) {
    if (refusal_.empty()) refusal_ = std::move(message);
  }

 private:
  const char* fn_;
  std::string refusal_;
};

// braid_group and braid_group_from: `sources` (may be NULL) receives each receive's sender.
braid_result_t runGroup(const char* fn, braid_comm_t comm, const braid_p2p_op_t* ops, int nops, int* sources) {
  return guarded([&] {
    braid::Communicator& c = need(comm, fn);
    if (nops < 0) invalid(fn, "nops=" + std::to_string(nops) + " is negative");
    if (nops > 0 && ops == nullptr) invalid(fn, "ops is NULL but nops is " + std::to_string(nops));
    std::vector<braid::P2pOp> cppOps;
    cppOps.reserve(static_cast<std::size_t>(nops));
    for (int i = 0; i < nops; ++i) {
      const braid_p2p_op_t& op = ops[i];
      if (!isType(op.type)) invalid(fn, "ops[" + std::to_string(i) + "]: " + notAType(op.type));
      braid::P2pOp cpp{op.is_recv ? braid::P2pOp::Kind::kRecv : braid::P2pOp::Kind::kSend,
                       op.peer,
                       op.buffer,
                       op.count,
                       static_cast<braid::DataType>(rawValue(op.type)),
                       op.tag};
      if (sources != nullptr) {
        // A send's entry names its own peer, so that every entry says something once the call succeeds.
        sources[i] = op.peer;
        if (op.is_recv) cpp.source = &sources[i];
      }
      cppOps.push_back(cpp);
    }
    c.group(cppOps, opts(comm));
  });
}

}  // namespace

extern "C" {

const char* braid_last_error(void) { return lastMessage; }

const char* braid_result_string(braid_result_t result) {
  switch (result) {
    case BRAID_SUCCESS:
      return "success";
    case BRAID_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case BRAID_ERR_TIMEOUT:
      return "timeout";
    case BRAID_ERR_PEER_LOST:
      return "peer lost";
    case BRAID_ERR_MISMATCH:
      return "mismatch between ranks";
    case BRAID_ERR_ABORTED:
      return "aborted";
    case BRAID_ERR_UNAVAILABLE:
      return "unavailable";
    case BRAID_ERR_INTERNAL:
      return "internal error";
    default:
      return "unknown result";
  }
}

braid_result_t braid_get_unique_id(braid_unique_id_t* id) {
  return guarded([&] {
    needPointer(id, "id", "braid_get_unique_id");
    const braid::UniqueId made = braid::Communicator::uniqueId();
    static_assert(sizeof id->bytes == sizeof made.bytes);
    for (std::size_t i = 0; i < sizeof id->bytes; ++i) id->bytes[i] = made.bytes[i];
  });
}

braid_result_t braid_comm_init(braid_comm_t* comm, const braid_unique_id_t* id, int rank, int size) {
  return guarded([&] {
    constexpr const char* kFn = "braid_comm_init";
    needPointer(comm, "comm (the output pointer)", kFn);
    *comm = nullptr;
    needPointer(id, "id", kFn);
    braid::UniqueId cppId;
    for (std::size_t i = 0; i < sizeof cppId.bytes; ++i) cppId.bytes[i] = id->bytes[i];
    auto made = std::make_unique<braid_comm>();
    made->impl = braid::Communicator::create(cppId, rank, size);
    *comm = made.release();
  });
}

braid_result_t braid_comm_init_env(braid_comm_t* comm) {
  return guarded([&] {
    needPointer(comm, "comm (the output pointer)", "braid_comm_init_env");
    *comm = nullptr;
    auto made = std::make_unique<braid_comm>();
    made->impl = braid::Communicator::fromEnvironment();
    *comm = made.release();
  });
}

braid_result_t braid_comm_destroy(braid_comm_t comm) {
  return guarded([&] {
    if (comm == nullptr) return;
    need(comm, "braid_comm_destroy");
    // The shell is retired before the communicator goes, so that no failure between the two can leave a handle
    // that is neither live nor marked destroyed.
    retire(comm);
    comm->impl.reset();
  });
}

braid_result_t braid_comm_split(braid_comm_t comm, int color, int key, braid_comm_t* newcomm) {
  return guarded([&] {
    braid::Communicator& c = need(comm, "braid_comm_split");
    needPointer(newcomm, "newcomm (the output pointer)", "braid_comm_split");
    *newcomm = nullptr;
    auto made = c.split(color, key);
    if (!made) return;
    auto wrapped = std::make_unique<braid_comm>();
    wrapped->impl = std::move(made);
    *newcomm = wrapped.release();
  });
}

braid_result_t braid_comm_subgroup(braid_comm_t comm, const int* ranks, int nranks, braid_comm_t* newcomm) {
  return guarded([&] {
    braid::Communicator& c = need(comm, "braid_comm_subgroup");
    needPointer(newcomm, "newcomm (the output pointer)", "braid_comm_subgroup");
    *newcomm = nullptr;
    if (nranks < 0) braid::fail(braid::ErrorCode::kInvalidArgument, {}, "braid_comm_subgroup: nranks ", nranks, " < 0");
    if (nranks > 0) needPointer(ranks, "ranks", "braid_comm_subgroup");
    auto wrapped = std::make_unique<braid_comm>();
    wrapped->impl = c.subgroup(std::vector<int>(ranks, ranks + nranks));
    *newcomm = wrapped.release();
  });
}

braid_result_t braid_comm_set_stream(braid_comm_t comm, void* stream) {
  return guarded([&] {
    need(comm, "braid_comm_set_stream");
    comm->stream.store(static_cast<CUstream_st*>(stream), std::memory_order_relaxed);
  });
}

braid_result_t braid_comm_abort(braid_comm_t comm) {
  return guarded([&] { need(comm, "braid_comm_abort").abort(); });
}

braid_result_t braid_comm_shrink(braid_comm_t comm, braid_comm_t* newcomm) {
  return guarded([&] {
    braid::Communicator& c = need(comm, "braid_comm_shrink");
    needPointer(newcomm, "newcomm (the output pointer)", "braid_comm_shrink");
    *newcomm = nullptr;
    auto wrapped = std::make_unique<braid_comm>();
    wrapped->impl = c.shrink();
    *newcomm = wrapped.release();
  });
}

braid_result_t braid_comm_rank(braid_comm_t comm, int* rank) {
  return guarded([&] {
    braid::Communicator& c = need(comm, "braid_comm_rank");
    needPointer(rank, "rank", "braid_comm_rank");
    *rank = c.rank();
  });
}

braid_result_t braid_comm_size(braid_comm_t comm, int* size) {
  return guarded([&] {
    braid::Communicator& c = need(comm, "braid_comm_size");
    needPointer(size, "size", "braid_comm_size");
    *size = c.size();
  });
}

braid_result_t braid_allreduce(const void* send, void* recv, size_t count, braid_datatype_t type, braid_redop_t op,
                               braid_comm_t comm) {
  return guarded([&] {
    Arguments args("braid_allreduce");
    braid::Communicator& c = need(comm, "braid_allreduce");
    const braid::ReduceOp o = args.op(op);
    args.collective(args.type(type), [&](braid::DataType t) { c.allreduce(send, recv, count, t, o, opts(comm)); });
  });
}

braid_result_t braid_allreduce_premul(const void* send, void* recv, size_t count, braid_datatype_t type, double scale,
                                      braid_comm_t comm) {
  return guarded([&] {
    Arguments args("braid_allreduce_premul");
    braid::Communicator& c = need(comm, "braid_allreduce_premul");
    args.collective(args.type(type), [&](braid::DataType t) {
      c.allreduce(send, recv, count, t, braid::ReduceOp::premulSum(scale), opts(comm));
    });
  });
}

braid_result_t braid_broadcast(void* buf, size_t count, braid_datatype_t type, int root, braid_comm_t comm) {
  return guarded([&] {
    Arguments args("braid_broadcast");
    braid::Communicator& c = need(comm, "braid_broadcast");
    args.collective(args.type(type), [&](braid::DataType t) { c.broadcast(buf, count, t, root, opts(comm)); });
  });
}

braid_result_t braid_reduce(const void* send, void* recv, size_t count, braid_datatype_t type, braid_redop_t op,
                            int root, braid_comm_t comm) {
  return guarded([&] {
    Arguments args("braid_reduce");
    braid::Communicator& c = need(comm, "braid_reduce");
    const braid::ReduceOp o = args.op(op);
    args.collective(args.type(type), [&](braid::DataType t) { c.reduce(send, recv, count, t, o, root, opts(comm)); });
  });
}

braid_result_t braid_allgather(const void* send, void* recv, size_t count, braid_datatype_t type, braid_comm_t comm) {
  return guarded([&] {
    Arguments args("braid_allgather");
    braid::Communicator& c = need(comm, "braid_allgather");
    args.collective(args.type(type), [&](braid::DataType t) { c.allgather(send, recv, count, t, opts(comm)); });
  });
}

braid_result_t braid_allgatherv(const void* send, size_t send_count, void* recv, const size_t* recv_counts,
                                const size_t* displs, braid_datatype_t type, braid_comm_t comm) {
  return guarded([&] {
    Arguments args("braid_allgatherv");
    braid::Communicator& c = need(comm, "braid_allgatherv");
    const braid::DataType checkedType = args.type(type);
    const auto counts = args.perRank(recv_counts, c, "recv_counts");
    const auto offsets = args.perRank(displs, c, "displs");
    args.collective(checkedType,
                    [&](braid::DataType t) { c.allgatherv(send, send_count, recv, counts, offsets, t, opts(comm)); });
  });
}

braid_result_t braid_reduce_scatter(const void* send, void* recv, size_t recv_count, braid_datatype_t type,
                                    braid_redop_t op, braid_comm_t comm) {
  return guarded([&] {
    Arguments args("braid_reduce_scatter");
    braid::Communicator& c = need(comm, "braid_reduce_scatter");
    const braid::ReduceOp o = args.op(op);
    args.collective(args.type(type),
                    [&](braid::DataType t) { c.reduceScatter(send, recv, recv_count, t, o, opts(comm)); });
  });
}

braid_result_t braid_alltoall(const void* send, void* recv, size_t count, braid_datatype_t type, braid_comm_t comm) {
  return guarded([&] {
    Arguments args("braid_alltoall");
    braid::Communicator& c = need(comm, "braid_alltoall");
    args.collective(args.type(type), [&](braid::DataType t) { c.alltoall(send, recv, count, t, opts(comm)); });
  });
}

braid_result_t braid_alltoallv(const void* send, const size_t* send_counts, const size_t* send_displs, void* recv,
                               const size_t* recv_counts, const size_t* recv_displs, braid_datatype_t type,
                               braid_comm_t comm) {
  return guarded([&] {
    Arguments args("braid_alltoallv");
    braid::Communicator& c = need(comm, "braid_alltoallv");
    const braid::DataType checkedType = args.type(type);
    const auto sendCounts = args.perRank(send_counts, c, "send_counts");
    const auto sendDispls = args.perRank(send_displs, c, "send_displs");
    const auto recvCounts = args.perRank(recv_counts, c, "recv_counts");
    const auto recvDispls = args.perRank(recv_displs, c, "recv_displs");
    args.collective(checkedType, [&](braid::DataType t) {
      c.alltoallv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, t, opts(comm));
    });
  });
}

braid_result_t braid_gather(const void* send, void* recv, size_t count, braid_datatype_t type, int root,
                            braid_comm_t comm) {
  return guarded([&] {
    Arguments args("braid_gather");
    braid::Communicator& c = need(comm, "braid_gather");
    args.collective(args.type(type), [&](braid::DataType t) { c.gather(send, recv, count, t, root, opts(comm)); });
  });
}

braid_result_t braid_scatter(const void* send, void* recv, size_t count, braid_datatype_t type, int root,
                             braid_comm_t comm) {
  return guarded([&] {
    Arguments args("braid_scatter");
    braid::Communicator& c = need(comm, "braid_scatter");
    args.collective(args.type(type), [&](braid::DataType t) { c.scatter(send, recv, count, t, root, opts(comm)); });
  });
}

braid_result_t braid_barrier(braid_comm_t comm) {
  return guarded([&] { need(comm, "braid_barrier").barrier(); });
}

braid_result_t braid_comm_register(braid_comm_t comm, void* buf, size_t bytes, uint64_t* handle) {
  return guarded([&] {
    braid::Communicator& c = need(comm, "braid_comm_register");
    if (handle == nullptr) braid::fail(braid::ErrorCode::kInvalidArgument, {}, "braid_comm_register: handle is NULL");
    *handle = c.registerBuffer(buf, bytes, opts(comm)).id;
  });
}

braid_result_t braid_comm_deregister(braid_comm_t comm, uint64_t handle) {
  return guarded(
      [&] { need(comm, "braid_comm_deregister").deregisterBuffer(braid::BufferRegistration{handle}, opts(comm)); });
}

braid_result_t braid_send(const void* buf, size_t count, braid_datatype_t type, int peer, int tag, braid_comm_t comm) {
  return guarded([&] {
    Arguments args("braid_send");
    braid::Communicator& c = need(comm, "braid_send");
    const braid::DataType t = args.type(type);
    args.check();
    c.send(buf, count, t, peer, tag, opts(comm));
  });
}

braid_result_t braid_recv(void* buf, size_t count, braid_datatype_t type, int peer, int tag, braid_comm_t comm) {
  return braid_recv_from(buf, count, type, peer, tag, nullptr, comm);
}

braid_result_t braid_recv_from(void* buf, size_t count, braid_datatype_t type, int peer, int tag, int* source,
                               braid_comm_t comm) {
  return guarded([&] {
    const char* fn = source ? "braid_recv_from" : "braid_recv";
    Arguments args(fn);
    braid::Communicator& c = need(comm, fn);
    const braid::DataType t = args.type(type);
    args.check();
    const int from = c.recv(buf, count, t, peer, tag, opts(comm));
    if (source) *source = from;
  });
}

braid_result_t braid_group(braid_comm_t comm, const braid_p2p_op_t* ops, int nops) {
  return runGroup("braid_group", comm, ops, nops, nullptr);
}

braid_result_t braid_group_from(braid_comm_t comm, const braid_p2p_op_t* ops, int nops, int* sources) {
  return runGroup("braid_group_from", comm, ops, nops, sources);
}

}  // extern "C"
