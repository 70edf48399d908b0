// The shared-memory slot: by the rank count unless BRAID_SHM_SLOT_BYTES sets it, and the layout every rank of a
// group computes from it.
#include "tuning/shm_slot.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "base/config.hpp"
#include "core/engine_stack.hpp"

namespace braid {
namespace {

constexpr std::size_t KiB = 1024;

TEST(ShmSlot, GrowsWithTheRankCountBetweenItsBounds) {
  EXPECT_EQ(tuning::shmSlotBytes(1, 0), 256 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(2, 0), 256 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(3, 0), 384 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(4, 0), 512 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(8, 0), 1024 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(16, 0), 1024 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(512, 0), 1024 * KiB);
}

TEST(ShmSlot, TheKnobWins) {
  EXPECT_EQ(tuning::shmSlotBytes(16, 64 * KiB), 64 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(2, 4096 * KiB), 4096 * KiB);
}

TEST(ShmSlot, TheGroupsLayoutTakesIt) {
  Settings s = Settings::fromEnvironment([](const std::string&) { return std::optional<std::string>(); });
  EXPECT_EQ(core::localFabricLayout(2, s).slotBytes, 256 * KiB);
  EXPECT_EQ(core::localFabricLayout(8, s).slotBytes, 1024 * KiB);
  const auto eight = core::localFabricLayout(8, s);
  EXPECT_EQ(eight.ringOffset, eight.slotOffset + 2 * eight.slotBytes);
  EXPECT_EQ(eight.regionBytes, eight.ringOffset + 8 * (256 * KiB));  // BRAID_SHM_P2P_BYTES' default
  s.shmSlotBytes = 96 * KiB;
  EXPECT_EQ(core::localFabricLayout(8, s).slotBytes, 96 * KiB);
}

}  // namespace
}  // namespace braid
