// Shared pieces of the GPU tests: a fixture that skips where there is no CUDA device, RAII device memory and
// streams, typed byte buffers and their fillers, and the bit-for-bit comparison with the CPU reference.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/data_type.hpp"
#include "base/error.hpp"
#include "braid/braid.hpp"
#include "braid/types.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_reduce.hpp"
#include "gpu/reference_values.hpp"
#include "support/reduce_support.hpp"

namespace braid::gputest {

inline constexpr DataType kAllTypes[] = {
    DataType::kBool,    DataType::kInt8,       DataType::kUint8,     DataType::kInt32,    DataType::kUint32,
    DataType::kInt64,   DataType::kUint64,     DataType::kFloat16,   DataType::kBFloat16, DataType::kFloat32,
    DataType::kFloat64, DataType::kFloat8E4M3, DataType::kFloat8E5M2};
inline constexpr ReduceKind kAllKinds[] = {ReduceKind::kSum,  ReduceKind::kProd, ReduceKind::kMin,
                                           ReduceKind::kMax,  ReduceKind::kAvg,  ReduceKind::kPremulSum,
                                           ReduceKind::kBand, ReduceKind::kBor,  ReduceKind::kBxor};

// The (type, op) pairs from the tests' own table, not the library's reductionSupported: an op the library wrongly
// refused would otherwise drop out of every matrix below unseen.
inline bool supported(DataType type, ReduceKind kind) { return testing::expectReduceSupported(type, kind); }

inline std::vector<ReduceKind> kindsOf(DataType type) {
  std::vector<ReduceKind> kinds;
  for (ReduceKind k : kAllKinds) {
    if (supported(type, k)) kinds.push_back(k);
  }
  return kinds;
}

// ---- RAII over the CUDA runtime (errors become braid::Error, which gtest reports as the test's failure).

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    cuda::checkCuda(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes), "cudaMalloc");
  }
  ~DeviceBuffer() { (void)cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::byte* data() const { return static_cast<std::byte*>(ptr_); }
  std::size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

class Stream {
 public:
  Stream() { cuda::checkCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { (void)cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  void sync() const { cuda::checkCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t stream_ = nullptr;
};

inline void toDevice(void* dst, const void* src, std::size_t bytes, const Stream& s) {
  cuda::checkCuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s.get()), "cudaMemcpyAsync H2D");
}
inline void toHost(void* dst, const void* src, std::size_t bytes, const Stream& s) {
  cuda::checkCuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s.get()), "cudaMemcpyAsync D2H");
}

/// Every GPU test derives from this: it skips where braid sees no CUDA device (this is how the binary runs, and
/// passes, on machines without a GPU or driver) and gives each test its own stream.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::deviceCount() == 0) GTEST_SKIP() << "no CUDA device (or no driver): GPU tests skipped";
    stream_ = std::make_unique<Stream>();
  }
  void TearDown() override { stream_.reset(); }
  const Stream& stream() const { return *stream_; }

 private:
  std::unique_ptr<Stream> stream_;
};

// ---- Element bits in byte buffers (little-endian, as the GPU and x86 are).

inline std::uint64_t getBits(const std::byte* base, std::size_t i, std::size_t size) {
  std::uint64_t v = 0;
  std::memcpy(&v, base + i * size, size);
  return v;
}
inline void putBits(std::byte* base, std::size_t i, std::size_t size, std::uint64_t bits) {
  std::memcpy(base + i * size, &bits, size);
}

/// v in the float type's bits, rounded to nearest even by the tests' own conversion (gpu/reference_values.hpp), not
/// braid's: exact for the small values the exact fills use.
inline std::uint64_t floatBits(DataType type, double v) { return ref::floatBitsOf(type, v); }

inline bool isNaNBits(DataType type, std::uint64_t bits) {
  switch (type) {
    case DataType::kFloat16:
      return (bits & 0x7fffu) > 0x7c00u;
    case DataType::kBFloat16:
      return (bits & 0x7fffu) > 0x7f80u;
    case DataType::kFloat32:
      return (bits & 0x7fffffffu) > 0x7f800000u;
    case DataType::kFloat64:
      return (bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    case DataType::kFloat8E4M3:
      return (bits & 0x7fu) == 0x7fu;
    case DataType::kFloat8E5M2:
      return (bits & 0x7fu) > 0x7cu;
    default:
      return false;
  }
}

inline std::uint64_t canonicalNaNBits(DataType type) {
  switch (type) {
    case DataType::kFloat16:
      return 0x7e00u;
    case DataType::kBFloat16:
      return 0x7fc0u;
    case DataType::kFloat32:
      return 0x7fc00000u;
    case DataType::kFloat8E4M3:
      return 0x7fu;
    case DataType::kFloat8E5M2:
      return 0x7eu;
    default:
      return 0x7ff8000000000000ull;
  }
}

/// A NaN of the float type with a sign and non-zero payload taken from r (quiet or signalling).
inline std::uint64_t nanBits(DataType type, std::uint64_t r) {
  const std::uint64_t payload = (r >> 8) | 1;
  const bool negative = (r & 64) != 0;
  switch (type) {
    case DataType::kFloat16:
      return (negative ? 0x8000u : 0u) | 0x7c00u | (payload & 0x3ffu);
    case DataType::kBFloat16:
      return (negative ? 0x8000u : 0u) | 0x7f80u | (payload & 0x7fu);
    case DataType::kFloat32:
      return (negative ? 0x80000000u : 0u) | 0x7f800000u | (payload & 0x7fffffu);
    case DataType::kFloat8E4M3:
      return (negative ? 0x80u : 0u) | 0x7fu;  // e4m3 has one NaN per sign
    case DataType::kFloat8E5M2:
      return (negative ? 0x80u : 0u) | 0x7cu | (payload & 0x3u);  // payload is odd: never an infinity
    default:
      return (negative ? 0x8000000000000000ull : 0u) | 0x7ff0000000000000ull | (payload & 0xfffffffffffffull);
  }
}

inline std::string hex(std::uint64_t bits, std::size_t size) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%0*llx", static_cast<int>(2 * size), static_cast<unsigned long long>(bits));
  return buf;
}

/// Random values of every kind, specials included: NaN with any sign and payload, infinities, signed zeros,
/// subnormals, values that overflow float16 (float8: the type itself) when summed, raw bit patterns; integers as raw
/// bits; bool as bytes 0, 1 and other non-zero values.
inline void fillWild(std::byte* base, std::size_t count, DataType type, std::mt19937_64& rng) {
  const std::size_t size = dataTypeSize(type);
  std::uniform_real_distribution<double> uni(-4, 4);
  // float8's own subnormal and overflow scales; float16's for the others.
  const double tiny = type == DataType::kFloat8E4M3 ? 0x1p-8 : type == DataType::kFloat8E5M2 ? 0x1p-15 : 1e-7;
  const double huge = type == DataType::kFloat8E4M3 ? 150 : type == DataType::kFloat8E5M2 ? 20000 : 16000;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t r = rng();
    if (type == DataType::kBool) {
      constexpr std::uint8_t kBytes[8] = {0, 0, 0, 1, 1, 2, 0x80, 0xff};
      putBits(base, i, 1, kBytes[r % 8]);
      continue;
    }
    if (!isFloating(type)) {
      putBits(base, i, size, r);
      continue;
    }
    const double u = uni(rng);
    double v = 0;
    switch (r % 32) {
      case 0:
        putBits(base, i, size, nanBits(type, r));
        continue;
      case 1:
        v = (r & 32) ? -INFINITY : INFINITY;
        break;
      case 2:
        v = (r & 32) ? -0.0 : 0.0;
        break;
      case 3:
      case 4:
        putBits(base, i, size, rng());  // arbitrary bits: subnormals, huge values, NaNs
        continue;
      case 5:
        v = u * tiny;  // subnormals
        break;
      case 6:
        v = u * huge;  // overflow in sums
        break;
      case 7:
        v = u * 1e37;  // bfloat16 / float32 overflow in sums and products
        break;
      case 8:
        v = u * 1e-39;  // float32 and bfloat16 subnormals
        break;
      default:
        v = u;
    }
    putBits(base, i, size, floatBits(type, v));
  }
}

/// Exact-sum inputs (nccl-tests' method): every sum, product, average and min/max of them is exact in every
/// type; bitwise and integer min/max over the full range. float8_e5m2 takes -0.5, 0 and 0.5 only, so that its sums
/// over 4 ranks (and premul_sum's doubled ones) stay exact too, whatever the order of the additions.
inline void fillExact(std::byte* base, std::size_t count, DataType type, ReduceKind kind, std::mt19937_64& rng) {
  const std::size_t size = dataTypeSize(type);
  const bool bitwise = kind == ReduceKind::kBand || kind == ReduceKind::kBor || kind == ReduceKind::kBxor;
  constexpr int kProdValues[3] = {1, 2, -1};
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t r = rng();
    const int small = static_cast<int>(r % 7) - 3;
    if (type == DataType::kBool) {
      putBits(base, i, 1, r % 3 == 0 ? 0 : (r % 3 == 1 ? 1 : 7));
    } else if (bitwise) {
      putBits(base, i, size, r);
    } else if (kind == ReduceKind::kProd) {
      const int p = kProdValues[r % 3];
      putBits(base, i, size, isFloating(type) ? floatBits(type, p) : static_cast<std::uint64_t>(p));
    } else if (type == DataType::kFloat8E5M2) {
      putBits(base, i, size, floatBits(type, (static_cast<int>(r % 3) - 1) * 0.5));
    } else if (isFloating(type)) {
      putBits(base, i, size, floatBits(type, small * 0.5));
    } else if (kind == ReduceKind::kMin || kind == ReduceKind::kMax) {
      putBits(base, i, size, r);  // full range: signed/unsigned comparison matters
    } else {
      putBits(base, i, size, static_cast<std::uint64_t>(static_cast<std::int64_t>(small)));
    }
  }
}

/// got == want, byte for byte, over count elements; on failure names the first differing element and how many
/// differ. describe(i) adds the inputs of element i.
template <typename Describe>
::testing::AssertionResult sameElements(const std::byte* got, const std::byte* want, std::size_t count, DataType type,
                                        Describe describe) {
  const std::size_t size = dataTypeSize(type);
  if (count == 0 || std::memcmp(got, want, count * size) == 0) return ::testing::AssertionSuccess();
  std::size_t first = count, bad = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(got + i * size, want + i * size, size) != 0) {
      if (first == count) first = i;
      ++bad;
    }
  }
  return ::testing::AssertionFailure() << bad << " of " << count << " elements differ; first at " << first << ": gpu "
                                       << hex(getBits(got, first, size), size) << " vs expected "
                                       << hex(getBits(want, first, size), size) << describe(first);
}

}  // namespace braid::gputest
