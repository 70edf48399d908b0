// BRAID_COMPRESS's wire kernels (algorithms/host/wire_kernels_impl.hpp), under every kernel set this CPU supports:
// the conversions against base/half.hpp's scalar ones, the compressed ring's fused steps against the unfused
// sequence of kernels they replace.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "algorithms/host/reduce_cpu.hpp"
#include "base/half.hpp"
#include "support/isa_levels.hpp"

namespace braid::host {
namespace {

using braid::testing::isaLevels;

class Bfloat16Wire : public ::testing::Test {
 protected:
  void TearDown() override { setReduceIsaCap("auto"); }
};

// BRAID_COMPRESS's wire kernels give base/half.hpp's bits on every ISA, for every bfloat16 value, rounding ties,
// infinities, NaNs (signalling ones made quiet) and random floats, at lengths that leave tails of every size.
TEST_F(Bfloat16Wire, WireBfloat16KernelsMatchTheScalarConversionsOnEveryIsa) {
  std::vector<float> values;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    values.push_back(std::bit_cast<float>(b << 16));
    values.push_back(std::bit_cast<float>((b << 16) | 0x8000u));  // ties
    values.push_back(std::bit_cast<float>((b << 16) | 0x7fffu));
  }
  for (std::uint32_t bits : {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7fbfffffu, 0x7f7f8000u, 0x00008000u}) {
    values.push_back(std::bit_cast<float>(bits));
  }
  std::mt19937 rng(20261201);
  for (int k = 0; k < 300000; ++k) values.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    for (const std::size_t count :
         {values.size(), std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{130}}) {
      std::vector<std::uint16_t> wire(count, 0xdead);
      toBfloat16(wire.data(), values.data(), count);
      std::vector<float> back(count, -1.0f);
      fromBfloat16(back.data(), wire.data(), count);
      for (std::size_t i = 0; i < count; ++i) {
        ASSERT_EQ(wire[i], floatToBfloat16(values[i]))
            << isa << ": " << std::hex << std::bit_cast<std::uint32_t>(values[i]) << " at " << std::dec << i;
        ASSERT_EQ(std::bit_cast<std::uint32_t>(back[i]), std::bit_cast<std::uint32_t>(bfloat16ToFloat(wire[i])))
            << isa << " at " << i;
      }
    }
  }
}

// The compressed ring's fused steps give the bits of the unfused sequence they replace (widen, reduceSources, round,
// widen back) on every ISA: NaNs and infinities on either side, sums that round to ties, averages, tails of every
// length, and finishBfloat16 in place (dst == a).
TEST_F(Bfloat16Wire, FusedBfloat16StepsMatchTheUnfusedSequenceOnEveryIsa) {
  std::mt19937 rng(20261202);
  std::vector<float> a;
  std::vector<std::uint16_t> b;
  for (std::uint32_t bits : {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0x00000001u,
                             0x80000000u, 0x3f808000u, 0x3f818000u}) {
    for (std::uint16_t other : {std::uint16_t{0x0000}, std::uint16_t{0x7fc0}, std::uint16_t{0xff80},
                                std::uint16_t{0x3f80}, std::uint16_t{0x8000}, std::uint16_t{0x7f81}}) {
      a.push_back(std::bit_cast<float>(bits));
      b.push_back(other);
    }
  }
  for (int k = 0; k < 200000; ++k) {
    a.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
    b.push_back(static_cast<std::uint16_t>(rng()));
    // Values near each other, whose sums land on bfloat16 ties.
    a.push_back(static_cast<float>(static_cast<int>(rng() % 2000) - 1000) / 64.0f);
    b.push_back(static_cast<std::uint16_t>(floatToBfloat16(static_cast<float>(rng() % 512) / 256.0f)));
  }
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    for (const std::size_t count : {a.size(), std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{129}}) {
      for (const int divisor : {1, 3}) {
        // The unfused sequence: widen b, reduce (sum, or avg by divisor), round, widen back.
        std::vector<float> widened(count), sum(count), back(count);
        std::vector<std::uint16_t> wantWire(count);
        fromBfloat16(widened.data(), b.data(), count);
        const void* srcs[2] = {a.data(), widened.data()};
        reduceSources(sum.data(), srcs, 2, count, DataType::kFloat32,
                      divisor == 1 ? ReduceKind::kSum : ReduceKind::kAvg, divisor);
        toBfloat16(wantWire.data(), sum.data(), count);
        fromBfloat16(back.data(), wantWire.data(), count);

        std::vector<std::uint16_t> wire(count, 0xdead);
        if (divisor == 1) {
          sumToBfloat16(wire.data(), a.data(), b.data(), count);
          for (std::size_t i = 0; i < count; ++i) {
            ASSERT_EQ(wire[i], wantWire[i]) << isa << " sumToBfloat16 at " << i << ": a " << std::hex
                                            << std::bit_cast<std::uint32_t>(a[i]) << " b " << b[i];
          }
        }
        std::vector<float> inPlace(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(count));
        std::fill(wire.begin(), wire.end(), 0xdead);
        finishBfloat16(inPlace.data(), wire.data(), inPlace.data(), b.data(), count, divisor);
        for (std::size_t i = 0; i < count; ++i) {
          ASSERT_EQ(wire[i], wantWire[i]) << isa << " finishBfloat16 /" << divisor << " at " << i;
          ASSERT_EQ(std::bit_cast<std::uint32_t>(inPlace[i]), std::bit_cast<std::uint32_t>(back[i]))
              << isa << " finishBfloat16 /" << divisor << " at " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace braid::host
