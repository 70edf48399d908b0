// Non-temporal stores (reduce_cpu.hpp's reduceSourcesStreaming and streamBytes) under every kernel set this CPU
// runs: the same bits as the ordinary stores at every alignment of dst, in place too, and not a byte written
// outside dst; and BRAID_SHM_STREAM_BYTES's reading. The collectives that stream are run whole in
// tests/multirank/thread_matrix_test.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "algorithms/host/reduce_cpu.hpp"
#include "base/data_type.hpp"
#include "braid/braid.hpp"
#include "core/engine_stack.hpp"
#include "support/isa_levels.hpp"
#include "support/reduce_reference.hpp"

namespace braid::host {
namespace {

using namespace braid::testing;

constexpr std::byte kGuard{0xa5};

// A 64-byte aligned arena of guard bytes with room for `bytes` at any offset below 128.
struct Arena {
  explicit Arena(std::size_t bytes) : storage(bytes + 256 + 64, kGuard) {}
  std::byte* at(std::size_t offset) {
    const auto base = reinterpret_cast<std::uintptr_t>(storage.data());
    return storage.data() + ((64 - base % 64) % 64) + offset;
  }
  // Whether every byte outside [p, p + bytes) still holds the guard.
  bool guardsIntactAround(const std::byte* p, std::size_t bytes) const {
    for (std::size_t i = 0; i < storage.size(); ++i) {
      const std::byte* q = storage.data() + i;
      if ((q < p || q >= p + bytes) && storage[i] != kGuard) return false;
    }
    return true;
  }
  std::vector<std::byte> storage;
};

// dst offsets from a line boundary, each a whole number of elements (the kernels' contract): aligned, one element
// in, one element short of the next line, three past it.
std::vector<std::size_t> offsetsFor(std::size_t esz) { return {0, esz, 64 - esz, 64 + 3 * esz}; }

TEST_F(ReduceCpu, StreamedReductionsWriteTheSameBitsAndNothingElse) {
  std::mt19937_64 rng(11);
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    for (DataType type : kAllTypes) {
      const std::size_t esz = dataTypeSize(type);
      for (ReduceKind kind : kAllKinds) {
        if (!supported(type, kind)) continue;
        for (int nsrcs : {1, 2, 3, 8}) {
          for (std::size_t count : {1, 63, 200, 4099}) {
            std::vector<Buffer> srcs;
            for (int s = 0; s < nsrcs; ++s) {
              srcs.emplace_back(type, count);
              fillWild(srcs.back(), rng);
            }
            const auto ptrs = pointers(srcs, nsrcs);
            Buffer expected(type, count);
            reduceSources(expected.data(), ptrs.data(), nsrcs, count, type, kind, 5);
            for (std::size_t offset : offsetsFor(esz)) {
              SCOPED_TRACE(isa + " " + dataTypeName(type) + " " + reduceKindName(kind) +
                           " nsrcs=" + std::to_string(nsrcs) + " count=" + std::to_string(count) +
                           " offset=" + std::to_string(offset));
              Arena arena(count * esz);
              std::byte* dst = arena.at(offset);
              reduceSourcesStreaming(dst, ptrs.data(), nsrcs, count, type, kind, 5);
              ASSERT_EQ(std::memcmp(dst, expected.data(), count * esz), 0);
              ASSERT_TRUE(arena.guardsIntactAround(dst, count * esz));
            }
          }
        }
      }
    }
  }
}

TEST_F(ReduceCpu, StreamedReductionMayOverwriteItsFirstSource) {
  std::mt19937_64 rng(12);
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    for (DataType type : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt64, DataType::kUint8}) {
      const std::size_t esz = dataTypeSize(type);
      for (int nsrcs : {1, 2, 5}) {
        const std::size_t count = 3001;
        SCOPED_TRACE(isa + " " + dataTypeName(type) + " nsrcs=" + std::to_string(nsrcs));
        std::vector<Buffer> srcs;
        for (int s = 0; s < nsrcs; ++s) {
          srcs.emplace_back(type, count);
          fillWild(srcs.back(), rng);
        }
        Arena arena(count * esz);
        std::byte* first = arena.at(esz);  // in place from a misaligned start: head, streamed body, tail
        std::memcpy(first, srcs[0].data(), count * esz);
        auto ptrs = pointers(srcs, nsrcs);
        Buffer expected(type, count);
        reduceSources(expected.data(), ptrs.data(), nsrcs, count, type, ReduceKind::kMax, 1);
        ptrs[0] = first;
        reduceSourcesStreaming(first, ptrs.data(), nsrcs, count, type, ReduceKind::kMax, 1);
        EXPECT_EQ(std::memcmp(first, expected.data(), count * esz), 0);
      }
    }
  }
}

TEST_F(ReduceCpu, StreamedCopiesAtEveryLengthAndAlignment) {
  std::vector<std::byte> src(70000);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 131 + 7);
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 200; ++n) lengths.push_back(n);
  for (std::size_t n : {255, 256, 4095, 4096, 65537}) lengths.push_back(n);
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    for (std::size_t bytes : lengths) {
      for (std::size_t dstOffset : {0, 1, 17, 63, 64}) {
        const std::size_t srcOffset = (dstOffset * 7 + bytes) % 64;
        Arena arena(bytes);
        std::byte* dst = arena.at(dstOffset);
        streamBytes(dst, src.data() + srcOffset, bytes);
        ASSERT_EQ(std::memcmp(dst, src.data() + srcOffset, bytes), 0)
            << isa << " bytes " << bytes << " dst offset " << dstOffset;
        ASSERT_TRUE(arena.guardsIntactAround(dst, bytes)) << isa << " bytes " << bytes << " offset " << dstOffset;
      }
    }
  }
  streamBytes(nullptr, nullptr, 0);  // nothing to copy: nothing touched
}

TEST(StreamingThreshold, AutoIsTheCoresL2AndTheKnobReadsBytesAndOff) {
  Settings s;
  topology::Topology machine;
  machine.l2CacheBytes = std::size_t{2} << 20;
  s.shmStreamBytes = "auto";
  EXPECT_EQ(core::streamingFromBytes(s, machine), std::size_t{2} << 20);
  machine.l2CacheBytes = 0;  // hwloc could not say
  EXPECT_EQ(core::streamingFromBytes(s, machine), std::size_t{1} << 20);
  s.shmStreamBytes = "off";
  EXPECT_EQ(core::streamingFromBytes(s, machine), std::numeric_limits<std::size_t>::max());
  s.shmStreamBytes = "4M";
  EXPECT_EQ(core::streamingFromBytes(s, machine), std::size_t{4} << 20);
  s.shmStreamBytes = "lots";
  try {
    core::streamingFromBytes(s, machine);
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("BRAID_SHM_STREAM_BYTES='lots'"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace braid::host
