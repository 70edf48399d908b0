// Argument checks and run-time choice of the CPU reduction kernels (the kernels live in reduce_cpu_*.cpp).
#include "algorithms/host/reduce_cpu.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <atomic>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>

#include "base/data_type.hpp"
#include "base/elementwise_op.hpp"
#include "base/error.hpp"

namespace braid::host {

namespace {

// Ordered: a cap keeps the lower of itself and what the CPU offers.
enum class Isa : int { kGeneric = 0, kAvx2 = 1, kAvx512 = 2 };
constexpr int kNoCap = 3;  // no cap: the CPU's best

#if defined(__x86_64__) || defined(__i386__)
// F16C from CPUID itself: clang before 16 does not know "f16c" in __builtin_cpu_supports. F16C needs no state of
// its own beyond AVX's, which the avx2 check below has already asked the OS about.
bool hasF16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}
#endif

Isa detectIsa() {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports also checks that the OS saves the AVX / AVX-512 register state (XGETBV).
  __builtin_cpu_init();
  const bool base = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && hasF16c();
  if (base && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    return Isa::kAvx512;
  }
  if (base) return Isa::kAvx2;
#endif
  return Isa::kGeneric;
}

Isa cpuIsa() {
  static const Isa isa = detectIsa();
  return isa;
}

const detail::ReduceKernels& kernelsAt(int level) {
#if defined(__x86_64__) || defined(__i386__)
  if (level == static_cast<int>(Isa::kAvx512)) return detail::kAvx512Kernels;
  if (level == static_cast<int>(Isa::kAvx2)) return detail::kAvx2Kernels;
#endif
  (void)level;
  return detail::kGenericKernels;
}

// The kernel set in use: the CPU's best, or the one BRAID_CPU_ISA caps it to (setReduceIsaCap). Null until a call
// first asks, which detects the CPU.
std::atomic<const detail::ReduceKernels*> gActive{nullptr};

[[gnu::cold, gnu::noinline]] const detail::ReduceKernels& detectActiveKernels() {
  const detail::ReduceKernels* best = &kernelsAt(static_cast<int>(cpuIsa()));
  const detail::ReduceKernels* none = nullptr;
  gActive.compare_exchange_strong(none, best, std::memory_order_relaxed);  // a cap set meanwhile stands
  return *gActive.load(std::memory_order_relaxed);
}

const detail::ReduceKernels& activeKernels() {
  if (const detail::ReduceKernels* active = gActive.load(std::memory_order_relaxed)) return *active;
  return detectActiveKernels();
}

// elementwiseOpOf for every (type, kind), at compile time; kRefused where it refuses.
constexpr std::uint8_t kRefused = 0xFF;

struct OpTable {
  std::uint8_t op[kNumDataTypes][kNumReduceKinds];
};

constexpr OpTable makeOpTable() {
  OpTable t{};
  for (int type = 0; type < kNumDataTypes; ++type) {
    for (int kind = 0; kind < kNumReduceKinds; ++kind) {
      const std::optional<ElementwiseOp> op =
          elementwiseOpOf(static_cast<DataType>(type), static_cast<ReduceKind>(kind));
      t.op[type][kind] = op ? static_cast<std::uint8_t>(*op) : kRefused;
    }
  }
  return t;
}

constinit const OpTable kOpTable = makeOpTable();

detail::KernelOp kernelOp(DataType type, ReduceKind kind) {
  const auto t = static_cast<unsigned>(type);
  const auto k = static_cast<unsigned>(kind);
  if (t < static_cast<unsigned>(kNumDataTypes) && k < static_cast<unsigned>(kNumReduceKinds) &&
      kOpTable.op[t][k] != kRefused) [[likely]] {
    return static_cast<detail::KernelOp>(kOpTable.op[t][k]);
  }
  return resolveElementwiseOp(type, kind, "reduceSources");  // throws, naming what it refuses
}

// An integral scale modulo 2^64: multiplying modulo 2^bits by it equals multiplying by the scale itself.
std::uint64_t wrapIntegralScale(double scale) {
  const double r = std::fmod(scale, 18446744073709551616.0);  // exact; |r| < 2^64
  return r < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(-r) : static_cast<std::uint64_t>(r);
}

// Orders the non-temporal stores before the stores after it: x86 keeps them out of its store order otherwise.
void fenceStreamingStores() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_sfence();
#endif
}

// kernelOp refused what has no kernel, and an invalid type: the entry is there.
ReduceKernel kernelAt(DataType type, detail::KernelOp op) {
  return (*activeKernels().reduce)[static_cast<std::size_t>(type)][static_cast<std::size_t>(op)];
}

void reduceChecked(void* dst, const void* const* srcs, int nsrcs, std::size_t count, DataType type, ReduceKind kind,
                   int avgDivisor, bool stream) {
  const detail::KernelOp op = kernelOp(type, kind);
  if (nsrcs < 1) fail(ErrorCode::kInvalidArgument, {}, "reduceSources: needs at least one source, got ", nsrcs);
  if (op == detail::KernelOp::kAvg && avgDivisor < 1) {
    fail(ErrorCode::kInvalidArgument, {}, "reduceSources: avg divisor must be >= 1, got ", avgDivisor);
  }
  if (count == 0) return;
  if (dst == nullptr || srcs == nullptr) fail(ErrorCode::kInvalidArgument, {}, "reduceSources: null buffer");
  for (int s = 0; s < nsrcs; ++s) {
    if (srcs[s] == nullptr) fail(ErrorCode::kInvalidArgument, {}, "reduceSources: source ", s, " is null");
  }
  kernelAt(type, op)(dst, srcs, nsrcs, count, avgDivisor, stream);
  if (stream) fenceStreamingStores();
}

}  // namespace

ReduceKernel reduceKernelFor(DataType type, ReduceKind kind) { return kernelAt(type, kernelOp(type, kind)); }

void reduceSources(void* dst, const void* const* srcs, int nsrcs, std::size_t count, DataType type, ReduceKind kind,
                   int avgDivisor) {
  reduceChecked(dst, srcs, nsrcs, count, type, kind, avgDivisor, false);
}

void reduceSourcesStreaming(void* dst, const void* const* srcs, int nsrcs, std::size_t count, DataType type,
                            ReduceKind kind, int avgDivisor) {
  reduceChecked(dst, srcs, nsrcs, count, type, kind, avgDivisor, true);
}

void streamBytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  activeKernels().streamCopy(dst, src, bytes);
  fenceStreamingStores();
}

void scaleCopy(void* dst, const void* src, std::size_t count, DataType type, double scale) {
  if (!isValid(type))
    fail(ErrorCode::kInvalidArgument, {}, "scaleCopy: invalid data type value ", static_cast<int>(type));
  std::uint64_t intScale = 0;
  if (type == DataType::kBool) {
    intScale = scale != 0 ? 1 : 0;
  } else if (isInteger(type)) {
    if (!std::isfinite(scale) || std::trunc(scale) != scale) {
      fail(ErrorCode::kInvalidArgument, {}, "scaleCopy: ", dataTypeName(type), " needs an integral scale, got ", scale);
    }
    intScale = wrapIntegralScale(scale);
  }
  if (count == 0) return;
  if (dst == nullptr || src == nullptr) fail(ErrorCode::kInvalidArgument, {}, "scaleCopy: null buffer");
  activeKernels().scale(dst, src, count, type, static_cast<float>(scale), scale, intScale);
}

void toBfloat16(std::uint16_t* dst, const float* src, std::size_t count) {
  if (count > 0) activeKernels().toBfloat16(dst, src, count);
}

void fromBfloat16(float* dst, const std::uint16_t* src, std::size_t count) {
  if (count > 0) activeKernels().fromBfloat16(dst, src, count);
}

void sumToBfloat16(std::uint16_t* wire, const float* a, const std::uint16_t* b, std::size_t count) {
  if (count > 0) activeKernels().sumToBfloat16(wire, a, b, count);
}

void finishBfloat16(float* dst, std::uint16_t* wire, const float* a, const std::uint16_t* b, std::size_t count,
                    int avgDivisor) {
  if (avgDivisor < 1) fail(ErrorCode::kInvalidArgument, {}, "finishBfloat16: divisor ", avgDivisor, " < 1");
  if (count > 0) activeKernels().finishBfloat16(dst, wire, a, b, count, static_cast<float>(avgDivisor));
}

const char* reduceIsaName() { return activeKernels().name; }

void setReduceIsaCap(std::string_view cap) {
  std::string name(cap);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int level = 0;
  if (name.empty() || name == "auto") {
    level = kNoCap;
  } else if (name == "generic") {
    level = static_cast<int>(Isa::kGeneric);
  } else if (name == "avx2") {
    level = static_cast<int>(Isa::kAvx2);
  } else if (name == "avx512") {
    level = static_cast<int>(Isa::kAvx512);
  } else {
    fail(ErrorCode::kInvalidArgument, {}, "unknown CPU ISA \"", cap,
         "\" (BRAID_CPU_ISA): expected auto, generic, avx2 or avx512");
  }
  const int best = static_cast<int>(cpuIsa());
  gActive.store(&kernelsAt(level < best ? level : best), std::memory_order_relaxed);
}

}  // namespace braid::host
