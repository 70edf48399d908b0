// The GPU reduction kernels against the test's own fold of the sources (gpu/reference_values.hpp: ref::foldAt, the
// documented element-wise rules written out here, with the tests' own float16/bfloat16/float8 rounding; not braid's CPU
// kernels, so a rule both paths got wrong still shows): same sources, same order, same bits, for every type x op x
// source count x size, on random inputs with every special value and on exact-sum inputs, with pointers aligned, all
// shifted by one element (packed after a lone head) and shifted differently (the one-element fallback).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu/gpu_test_support.hpp"
#include "gpu/reference_values.hpp"

namespace braid::gputest {
namespace {

// dst[j] = the fold of the sources' element j, computed on the host by the test.
void referenceInto(std::byte* dst, const std::vector<const void*>& srcs, std::size_t count, DataType type,
                   ReduceKind kind, int avgDivisor) {
  std::vector<const std::byte*> at;
  for (const void* p : srcs) at.push_back(static_cast<const std::byte*>(p));
  for (std::size_t j = 0; j < count; ++j) ref::putBitsAt(dst, j, type, ref::foldAt(at, j, type, kind, avgDivisor));
}

constexpr std::size_t kGuardBytes = 64;  // around dst: a kernel writing outside [dst, dst + count) shows there

// Where the pointers sit relative to 16-byte boundaries.
enum class Placement {
  kAligned,     // every pointer 16-byte aligned: all packs
  kAllShifted,  // every pointer one element past alignment: a lone head, then packs
  kMixed,       // dst aligned, sources alternately shifted: no common alignment, one element at a time
};
constexpr Placement kAllPlacements[] = {Placement::kAligned, Placement::kAllShifted, Placement::kMixed};

const char* placementName(Placement p) {
  switch (p) {
    case Placement::kAligned:
      return "aligned";
    case Placement::kAllShifted:
      return "all+1";
    case Placement::kMixed:
      return "mixed";
  }
  return "?";
}

// nsrcs source regions of up to maxCount + 1 elements (room for the one-element shift), in host memory and in one
// device allocation at the same offsets, so source s of the CPU and of the GPU hold the same bits.
class SourcePool {
 public:
  SourcePool(DataType type, int nsrcs, std::size_t maxCount)
      : type_(type),
        size_(dataTypeSize(type)),
        nsrcs_(nsrcs),
        stride_(((maxCount + 1) * size_ + 255) / 256 * 256),
        host_(stride_ * static_cast<std::size_t>(nsrcs)),
        device_(host_.size()) {}

  std::byte* hostRegion(int s) { return host_.data() + stride_ * static_cast<std::size_t>(s); }
  void upload(const Stream& stream) {
    toDevice(device_.data(), host_.data(), host_.size(), stream);
    ++generation_;
  }
  // Counts how often the sources changed, so that a cached reference is not reused across uploads.
  std::uint64_t generation() const { return generation_; }

  std::size_t shiftOf(Placement p, int s) const {
    if (p == Placement::kAligned) return 0;
    if (p == Placement::kAllShifted) return size_;
    return s % 2 == 0 ? size_ : 0;
  }
  const void* host(int s, Placement p) const {
    return host_.data() + stride_ * static_cast<std::size_t>(s) + shiftOf(p, s);
  }
  const void* device(int s, Placement p) const {
    return device_.data() + stride_ * static_cast<std::size_t>(s) + shiftOf(p, s);
  }
  DataType type() const { return type_; }
  int nsrcs() const { return nsrcs_; }

 private:
  DataType type_;
  std::size_t size_;
  int nsrcs_;
  std::size_t stride_;
  std::uint64_t generation_ = 0;
  std::vector<std::byte> host_;
  DeviceBuffer device_;
};

// Runs one reduction on the GPU and the reference on the host, compares results and guard bytes.
class Runner {
 public:
  Runner(DataType type, std::size_t maxCount, const Stream& stream)
      : size_(dataTypeSize(type)),
        stream_(stream),
        dst_(2 * kGuardBytes + (maxCount + 1) * size_),
        got_(dst_.size()),
        want_(dst_.size()) {}

  ::testing::AssertionResult run(const SourcePool& pool, ReduceKind kind, int nsrcs, std::size_t count, Placement p,
                                 int avgDivisor) {
    const DataType type = pool.type();
    const std::size_t dstOffset = kGuardBytes + (p == Placement::kAllShifted ? size_ : 0);
    std::vector<const void*> devSrcs, hostSrcs;
    for (int s = 0; s < nsrcs; ++s) {
      devSrcs.push_back(pool.device(s, p));
      hostSrcs.push_back(pool.host(s, p));
    }
    cuda::checkCuda(cudaMemsetAsync(dst_.data(), 0xa5, dst_.size(), stream_.get()), "cudaMemsetAsync");
    cuda::reduceSourcesOnDevice(dst_.data() + dstOffset, devSrcs.data(), nsrcs, count, type, kind, avgDivisor,
                                stream_.get());
    toHost(got_.data(), dst_.data(), dst_.size(), stream_);
    std::fill(want_.begin(), want_.end(), std::byte{0xa5});
    // A shorter call over the same sources is a prefix of a longer one: the reference of the longest call so far
    // serves every shorter one (the tests go from long to short), which keeps the host's share of the time small.
    const auto key = std::make_tuple(&pool, pool.generation(), kind, nsrcs, p, avgDivisor);
    if (!(key == cacheKey_ && count <= cachedCount_)) {
      cached_.resize(count * size_ + 1);
      referenceInto(cached_.data(), hostSrcs, count, type, kind, avgDivisor);
      cacheKey_ = key;
      cachedCount_ = count;
    }
    std::memcpy(want_.data() + dstOffset, cached_.data(), count * size_);
    stream_.sync();

    const auto describe = [&](std::size_t i) {
      std::string s = "; sources:";
      for (int k = 0; k < nsrcs && k < 8; ++k) {
        s += " " + hex(getBits(static_cast<const std::byte*>(hostSrcs[static_cast<std::size_t>(k)]), i, size_), size_);
      }
      return s + (nsrcs > 8 ? " ..." : "");
    };
    auto result = sameElements(got_.data() + dstOffset, want_.data() + dstOffset, count, type, describe);
    if (!result) return result;
    // The guard bytes on both sides of dst keep the memset pattern.
    const std::size_t end = dstOffset + count * size_;
    for (const auto& [from, to] : {std::pair{std::size_t{0}, dstOffset}, std::pair{end, got_.size()}}) {
      for (std::size_t b = from; b < to; ++b) {
        if (got_[b] != std::byte{0xa5}) {
          return ::testing::AssertionFailure() << "wrote outside dst: byte " << static_cast<long long>(b - dstOffset)
                                               << " relative to dst (count " << count << ")";
        }
      }
    }
    return ::testing::AssertionSuccess();
  }

 private:
  std::size_t size_;
  const Stream& stream_;
  DeviceBuffer dst_;
  std::vector<std::byte> got_;
  std::vector<std::byte> want_;
  std::vector<std::byte> cached_;
  std::tuple<const SourcePool*, std::uint64_t, ReduceKind, int, Placement, int> cacheKey_{};
  std::size_t cachedCount_ = 0;
};

std::string caseName(DataType type, ReduceKind kind, int nsrcs, std::size_t count, Placement p, const char* fill) {
  return strCat(dataTypeName(type), " ", reduceKindName(kind), " nsrcs=", nsrcs, " count=", count, " ",
                placementName(p), " ", fill);
}

class DeviceReduce : public GpuTest, public ::testing::WithParamInterface<DataType> {};

constexpr std::size_t kCounts[] = {(std::size_t{1} << 20) + 3, 1023, 7, 1, 0};  // longest first (see Runner)
constexpr int kSourceCounts[] = {1, 2, 3, 8};
constexpr std::size_t kMaxCount = (std::size_t{1} << 20) + 3;

// The full matrix: every op x nsrcs {1, 2, 3, 8} x count x placement, on exact and on wild inputs.
TEST_P(DeviceReduce, MatchesReferenceEveryOpCountAndPlacement) {
  const DataType type = GetParam();
  SourcePool pool(type, 8, kMaxCount);
  Runner runner(type, kMaxCount, stream());
  std::mt19937_64 rng(1234 + static_cast<int>(type));
  for (const char* fill : {"exact", "wild"}) {
    const bool exact = std::string(fill) == "exact";
    if (!exact) {
      for (int s = 0; s < pool.nsrcs(); ++s) fillWild(pool.hostRegion(s), kMaxCount + 1, type, rng);
      pool.upload(stream());
    }
    for (ReduceKind kind : kindsOf(type)) {
      if (exact) {
        for (int s = 0; s < pool.nsrcs(); ++s) fillExact(pool.hostRegion(s), kMaxCount + 1, type, kind, rng);
        pool.upload(stream());
      }
      for (int nsrcs : kSourceCounts) {
        for (Placement p : kAllPlacements) {
          for (std::size_t count : kCounts) {
            ASSERT_TRUE(runner.run(pool, kind, nsrcs, count, p, nsrcs)) << caseName(type, kind, nsrcs, count, p, fill);
          }
        }
      }
    }
  }
}

// The other unrolled kernels (4..7 sources), the generic one (9+, by value up to 128) and the launcher's device
// copy of longer source lists.
TEST_P(DeviceReduce, MatchesReferenceForEverySourceCountKernel) {
  const DataType type = GetParam();
  constexpr std::size_t kCount = 4099;
  constexpr int kMaxSources = 300;
  SourcePool pool(type, kMaxSources, kCount);
  Runner runner(type, kCount, stream());
  std::mt19937_64 rng(99 + static_cast<int>(type));
  for (int s = 0; s < kMaxSources; ++s) fillWild(pool.hostRegion(s), kCount + 1, type, rng);
  pool.upload(stream());
  for (ReduceKind kind : kindsOf(type)) {
    for (int nsrcs : {4, 5, 6, 7, 9, 16, 127, 128, 129, 300}) {
      for (Placement p : kAllPlacements) {
        for (std::size_t count : {kCount, std::size_t{33}, std::size_t{1}}) {
          ASSERT_TRUE(runner.run(pool, kind, nsrcs, count, p, nsrcs)) << caseName(type, kind, nsrcs, count, p, "wild");
        }
      }
    }
  }
}

// avg with divisors other than the source count: integers truncate toward zero, floats divide once.
class DeviceReduceAverage : public DeviceReduce {};

TEST_P(DeviceReduceAverage, AverageWithAnyDivisor) {
  const DataType type = GetParam();
  constexpr std::size_t kCount = 100003;
  SourcePool pool(type, 9, kCount);
  Runner runner(type, kCount, stream());
  std::mt19937_64 rng(7 + static_cast<int>(type));
  for (int s = 0; s < pool.nsrcs(); ++s) fillWild(pool.hostRegion(s), kCount + 1, type, rng);
  pool.upload(stream());
  for (int divisor : {1, 2, 3, 7, 255, 256, 1000, 65537, 2147483647}) {
    for (int nsrcs : {1, 2, 5, 9}) {
      ASSERT_TRUE(runner.run(pool, ReduceKind::kAvg, nsrcs, kCount, Placement::kAllShifted, divisor))
          << dataTypeName(type) << " nsrcs=" << nsrcs << " divisor=" << divisor;
    }
  }
}

// dst == srcs[0], the in-place form every collective uses for its own buffer.
TEST_P(DeviceReduce, InPlaceIntoFirstSource) {
  const DataType type = GetParam();
  const std::size_t size = dataTypeSize(type);
  constexpr std::size_t kCount = (std::size_t{1} << 18) + 5;
  SourcePool pool(type, 9, kCount);
  std::mt19937_64 rng(31 + static_cast<int>(type));
  for (int s = 0; s < pool.nsrcs(); ++s) fillWild(pool.hostRegion(s), kCount + 1, type, rng);
  pool.upload(stream());
  DeviceBuffer inout((kCount + 1) * size);
  std::vector<std::byte> want((kCount + 1) * size), got(want.size());
  for (ReduceKind kind : kindsOf(type)) {
    for (int nsrcs : {1, 2, 3, 8, 9}) {
      for (Placement p : {Placement::kAligned, Placement::kAllShifted}) {
        const std::size_t shift = p == Placement::kAllShifted ? size : 0;
        std::vector<const void*> devSrcs{inout.data() + shift}, hostSrcs{want.data() + shift};
        for (int s = 1; s < nsrcs; ++s) {
          devSrcs.push_back(pool.device(s, p));
          hostSrcs.push_back(pool.host(s, p));
        }
        std::memcpy(want.data() + shift, pool.host(0, p), kCount * size);
        toDevice(inout.data() + shift, pool.host(0, p), kCount * size, stream());
        cuda::reduceSourcesOnDevice(inout.data() + shift, devSrcs.data(), nsrcs, kCount, type, kind, nsrcs,
                                    stream().get());
        toHost(got.data() + shift, inout.data() + shift, kCount * size, stream());
        // The reference reads source 0 from a copy: want's first region is overwritten by the result.
        const std::vector<std::byte> first(want.begin() + static_cast<std::ptrdiff_t>(shift),
                                           want.begin() + static_cast<std::ptrdiff_t>(shift + kCount * size));
        hostSrcs[0] = first.data();
        referenceInto(want.data() + shift, hostSrcs, kCount, type, kind, nsrcs);
        stream().sync();
        ASSERT_TRUE(sameElements(got.data() + shift, want.data() + shift, kCount, type, [](std::size_t) { return ""; }))
            << caseName(type, kind, nsrcs, kCount, p, "in place");
      }
    }
  }
}

// float16 and bfloat16: every one of the 65536 bit patterns as source 0, against a shuffled copy as source 1,
// through every op: widening, the float32 operators and the rounding back, on every value.
class DeviceReduceHalf : public DeviceReduce {};

TEST_P(DeviceReduceHalf, EveryBitPattern) {
  const DataType type = GetParam();
  constexpr std::size_t kCount = 65536;
  SourcePool pool(type, 3, kCount);
  Runner runner(type, kCount, stream());
  std::vector<std::uint16_t> all(kCount);
  std::iota(all.begin(), all.end(), std::uint16_t{0});
  std::memcpy(pool.hostRegion(0), all.data(), kCount * 2);
  std::mt19937_64 rng(5);
  for (int s = 1; s < 3; ++s) {
    std::shuffle(all.begin(), all.end(), rng);
    std::memcpy(pool.hostRegion(s), all.data(), kCount * 2);
  }
  pool.upload(stream());
  for (ReduceKind kind : kindsOf(type)) {
    for (int nsrcs : {1, 2, 3}) {
      ASSERT_TRUE(runner.run(pool, kind, nsrcs, kCount, Placement::kAligned, 3))
          << caseName(type, kind, nsrcs, kCount, Placement::kAligned, "all bit patterns");
    }
  }
}

// float8: every ordered pair of the 256 codes (NaNs, infinities, subnormals, signed zeros, sums past the largest
// value), as sources 0 and 1, with a shuffled copy as source 2, through every op.
class DeviceReduceFloat8 : public DeviceReduce {};

TEST_P(DeviceReduceFloat8, EveryPairOfCodes) {
  const DataType type = GetParam();
  constexpr std::size_t kCount = 65536;
  SourcePool pool(type, 3, kCount);
  Runner runner(type, kCount, stream());
  std::vector<std::uint8_t> codes(kCount);
  for (std::size_t i = 0; i < kCount; ++i) codes[i] = static_cast<std::uint8_t>(i >> 8);
  std::memcpy(pool.hostRegion(0), codes.data(), kCount);
  for (std::size_t i = 0; i < kCount; ++i) codes[i] = static_cast<std::uint8_t>(i);
  std::memcpy(pool.hostRegion(1), codes.data(), kCount);
  std::mt19937_64 rng(6);
  std::shuffle(codes.begin(), codes.end(), rng);
  std::memcpy(pool.hostRegion(2), codes.data(), kCount);
  pool.upload(stream());
  for (ReduceKind kind : kindsOf(type)) {
    for (int nsrcs : {1, 2, 3}) {
      for (Placement p : kAllPlacements) {
        ASSERT_TRUE(runner.run(pool, kind, nsrcs, kCount, p, nsrcs))
            << caseName(type, kind, nsrcs, kCount, p, "all code pairs");
      }
    }
  }
}

std::vector<DataType> typesWith(ReduceKind kind) {
  std::vector<DataType> types;
  for (DataType t : kAllTypes) {
    if (supported(t, kind)) types.push_back(t);
  }
  return types;
}
const auto kTypeName = [](const ::testing::TestParamInfo<DataType>& param) { return dataTypeName(param.param); };

INSTANTIATE_TEST_SUITE_P(AllTypes, DeviceReduce, ::testing::ValuesIn(kAllTypes), kTypeName);
// avg is defined on every type but bool (the tests' table): bool is not instantiated.
INSTANTIATE_TEST_SUITE_P(AvgTypes, DeviceReduceAverage, ::testing::ValuesIn(typesWith(ReduceKind::kAvg)), kTypeName);
INSTANTIATE_TEST_SUITE_P(HalfTypes, DeviceReduceHalf, ::testing::Values(DataType::kFloat16, DataType::kBFloat16),
                         kTypeName);
INSTANTIATE_TEST_SUITE_P(Float8Types, DeviceReduceFloat8,
                         ::testing::Values(DataType::kFloat8E4M3, DataType::kFloat8E5M2), kTypeName);

}  // namespace
}  // namespace braid::gputest
