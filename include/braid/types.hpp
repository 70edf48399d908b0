/// braid's vocabulary types: data types, reduction operators, error codes.
/// Everything here is plain data usable from any layer and from user code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

/// The CUDA runtime's stream type: cudaStream_t is CUstream_st*, so callers pass their cudaStream_t (or
/// at::cuda::CUDAStream::stream()) to braid without braid's headers including CUDA's.
struct CUstream_st;

namespace braid {

/// Element type of a buffer. The numbering is part of the C ABI (braid.h) and never changes.
enum class DataType : std::uint8_t {
  kBool = 0,
  kInt8 = 1,
  kUint8 = 2,
  kInt32 = 3,
  kUint32 = 4,
  kInt64 = 5,
  kUint64 = 6,
  kFloat16 = 7,
  kBFloat16 = 8,
  kFloat32 = 9,
  kFloat64 = 10,
  kFloat8E4M3 = 11,  ///< OCP FP8 E4M3 "fn": bias 7, no infinities, NaN = S.1111.111, max finite 448
  kFloat8E5M2 = 12,  ///< FP8 E5M2: IEEE-like, bias 15, infinities, max finite 57344
};
inline constexpr int kNumDataTypes = 13;

/// Reduction operators. Semantics per type:
/// - kSum, kProd on integers wrap modulo 2^bits (two's complement), as in C++ unsigned arithmetic;
/// - kAvg divides the sum by the number of ranks; on integers the division truncates toward zero
///   (C++ `/`), so avg of {1, 2} is 1 and avg of {-1, -2} is -1;
/// - kPremulSum multiplies each rank's input by that rank's ReduceOp::scale, then sums (as NCCL's
///   ncclRedOpCreatePreMulSum and PyTorch's PREMUL_SUM); on integers the scale must be integral;
/// - kBand, kBor, kBxor are bitwise and accept integers and bool only;
/// - on bool, kSum and kMax are logical or, kProd and kMin logical and; kAvg and kPremulSum are refused.
/// float16 and bfloat16 accumulate in float32 and round once per result.
/// float8_e4m3 and float8_e5m2 do the same: every reduction widens its sources to float32, combines them in source
/// order in IEEE float32 and rounds once per stored result (kAvg divides the float32 sum by the rank count first;
/// kPremulSum rounds the exact product of each input and its scale, rounded to float32, once to the type). The
/// rounding is to nearest, ties to even, with subnormals kept; a magnitude beyond the largest finite value,
/// infinities included, saturates to +-448 (e4m3) or +-57344 (e5m2), as CUDA's __NV_SATFINITE conversion does; NaN
/// becomes the type's canonical NaN (e4m3 0x7f, e5m2 0x7e, both positive); zero keeps its sign. A reduction over
/// several steps (a ring, a tree) rounds its partial results too, as for every float type.
enum class ReduceKind : std::uint8_t {
  kSum = 0,
  kProd = 1,
  kMin = 2,
  kMax = 3,
  kAvg = 4,
  kPremulSum = 5,
  kBand = 6,
  kBor = 7,
  kBxor = 8,
};
inline constexpr int kNumReduceKinds = 9;

/// A reduction operator with its argument (the pre-multiplier of kPremulSum; ranks may pass different ones).
struct ReduceOp {
  ReduceKind kind = ReduceKind::kSum;
  double scale = 1.0;

  constexpr ReduceOp() = default;
  constexpr ReduceOp(ReduceKind k) : kind(k) {}  // NOLINT: implicit on purpose, `ReduceKind::kMax` reads well
  static constexpr ReduceOp premulSum(double s) {
    ReduceOp op(ReduceKind::kPremulSum);
    op.scale = s;
    return op;
  }
};

/// The peer of a receive that takes the first message with its tag from any rank (MPI_ANY_SOURCE). Host buffers
/// only; a send names its peer.
inline constexpr int kAnySource = -1;

/// One point-to-point operation of a group (see Communicator::group).
struct P2pOp {
  enum class Kind { kSend, kRecv } kind;
  int peer;      ///< a rank, or kAnySource for a receive
  void* buffer;  ///< read for kSend, written for kRecv
  std::size_t count;
  DataType type;
  int tag = 0;
  /// Where a receive writes the rank its message came from (when not null), by the time it completes: how a receive
  /// from kAnySource learns its sender. It must stay valid until the operation completes.
  int* source = nullptr;
};

/// Error codes; the numbering is part of the C ABI (braid.h).
enum class ErrorCode : int {
  kInvalidArgument = 1,  ///< the caller passed something braid cannot use; nothing was sent
  kTimeout = 2,          ///< a wait outlasted its timeout; the peers named had not arrived
  kPeerLost = 3,         ///< a peer died or became unreachable
  kMismatch = 4,         ///< ranks called different collectives, types, counts or roots
  kAborted = 5,          ///< the communicator was aborted
  kUnavailable = 6,      ///< the feature or resource is not available here (no GPU, no shm, ...)
  kInternal = 7,         ///< a bug in braid or a system call failing unexpectedly
};

/// Where an error happened. Fields left at their defaults are not known and not printed.
struct ErrorContext {
  int rank = -1;          ///< the rank that raised the error
  int peer = -1;          ///< the peer involved, if one is
  std::string op;         ///< the operation, e.g. "allreduce"
  std::int64_t seq = -1;  ///< the communicator's sequence number of that operation
};

/// The one exception type braid throws. what() reads e.g.
/// "braid PeerLost [rank 2, peer 3, allreduce #17]: peer process 4242 exited".
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message, ErrorContext context = {});

  ErrorCode code() const noexcept { return code_; }
  const ErrorContext& context() const noexcept { return context_; }
  /// The message without the code and context prefix.
  const std::string& message() const noexcept { return message_; }

 private:
  ErrorCode code_;
  ErrorContext context_;
  std::string message_;
};

/// "InvalidArgument", "Timeout", ...
const char* errorCodeName(ErrorCode code) noexcept;
/// "float32", "bfloat16", ...
const char* dataTypeName(DataType type) noexcept;
/// "sum", "premul_sum", ...
const char* reduceKindName(ReduceKind kind) noexcept;
/// Bytes per element; 0 for a value outside DataType. Inline: every call sizes its buffers with it.
constexpr std::size_t dataTypeSize(DataType type) noexcept {
  constexpr unsigned char kSizes[kNumDataTypes] = {1, 1, 1, 4, 4, 8, 8, 2, 2, 4, 8, 1, 1};  // by DataType's value
  const auto i = static_cast<unsigned>(type);
  return i < static_cast<unsigned>(kNumDataTypes) ? kSizes[i] : 0;
}

}  // namespace braid
