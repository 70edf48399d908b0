// The shared-memory slot: by the rank count and a rank's threads unless BRAID_SHM_SLOT_BYTES sets it, and the layout
// every rank of a group computes from it; the threads themselves (BRAID_SHM_THREADS).
#include "tuning/shm_slot.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/config.hpp"
#include "base/error.hpp"
#include "core/engine_stack.hpp"

namespace braid {
namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;
// A /dev/shm that holds any layout here, so that the tests do not depend on this machine's.
constexpr std::uint64_t kRoomy = std::uint64_t{1} << 40;

TEST(ShmSlot, GrowsWithTheRankCountBetweenItsBounds) {
  EXPECT_EQ(tuning::shmSlotBytes(1, 0), 256 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(2, 0), 256 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(3, 0), 384 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(4, 0), 512 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(8, 0), 1024 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(16, 0), 1024 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(512, 0), 1024 * KiB);
}

TEST(ShmSlot, GrowsWithTheThreadsOfARankUpToItsBound) {
  EXPECT_EQ(tuning::shmSlotBytes(2, 0, 1), 256 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(2, 0, 8), 2048 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(8, 0, 2), 2048 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(16, 0, 64), 8192 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(2, 96 * KiB, 8), 96 * KiB);  // the knob still wins
}

TEST(ShmSlot, TheThreadsKnob) {
  Settings s = Settings::fromEnvironment([](const std::string&) { return std::optional<std::string>(); });
  EXPECT_EQ(core::sharedMemoryThreads(s, {.ranks = 2, .cpus = 16, .shmBytes = kRoomy}, 2), 8);  // the default, auto
  s.shmThreads = "";
  EXPECT_EQ(core::sharedMemoryThreads(s, {.ranks = 2, .cpus = 16, .shmBytes = kRoomy}, 2),
            8);  // set empty: the default
  s.shmThreads = "1";
  EXPECT_EQ(core::sharedMemoryThreads(s, {.ranks = 2, .cpus = 16, .shmBytes = kRoomy}, 2), 1);  // the caller alone
  s.shmThreads = "4";
  EXPECT_EQ(core::sharedMemoryThreads(s, {.ranks = 2, .cpus = 16, .shmBytes = kRoomy}, 2), 4);
  EXPECT_EQ(core::localFabricLayout(2, s, {.ranks = 2, .cpus = 16, .shmBytes = kRoomy}).slotBytes, 1024 * KiB);
  s.shmThreads = "auto";
  EXPECT_EQ(core::sharedMemoryThreads(s, {.ranks = 2, .cpus = 16, .shmBytes = kRoomy}, 2),
            8);  // the host's CPUs by its ranks
  EXPECT_EQ(core::sharedMemoryThreads(s, {.ranks = 4, .cpus = 10, .shmBytes = kRoomy}, 4), 2);  // rounded down
  EXPECT_EQ(core::sharedMemoryThreads(s, {.ranks = 16, .cpus = 16, .shmBytes = kRoomy}, 16),
            1);  // ranks bound a core each
  EXPECT_EQ(core::sharedMemoryThreads(s, {.ranks = 8, .cpus = 2, .shmBytes = kRoomy}, 8),
            1);  // ranks outnumber the CPUs
  EXPECT_EQ(core::sharedMemoryThreads(s, {.ranks = 1, .cpus = 128, .shmBytes = kRoomy}, 1), 8);  // at most 8
  for (const char* bad : {"0", "-1", "two", "3x", "257"}) {
    s.shmThreads = bad;
    try {
      core::sharedMemoryThreads(s, {.ranks = 2, .cpus = 16, .shmBytes = kRoomy}, 2);
      ADD_FAILURE() << "BRAID_SHM_THREADS=" << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(std::string("BRAID_SHM_THREADS='") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(ShmSlot, AutoLeavesHalfOfDevShm) {
  Settings s = Settings::fromEnvironment([](const std::string&) { return std::optional<std::string>(); });
  const auto on = [](int ranks, std::uint64_t shm) {
    return core::HostLayout{.ranks = ranks, .cpus = 128, .shmBytes = shm};
  };
  // 2 ranks of 8 threads: two regions of 2 MiB slots and 256 KiB rings, about 9 MiB, fit in half of Docker's 64 MiB.
  EXPECT_EQ(core::sharedMemoryThreads(s, on(2, 64 * MiB), 2), 8);
  // 8 ranks of 8 threads take 8 x (2 x 8 MiB + 8 x 256 KiB) = 144 MiB: 1 GiB holds them, 256 MiB holds 6 threads'
  // 112 MiB (7 threads' 128 MiB and the control pages pass the half), and 64 MiB not even one thread's 32 MiB.
  EXPECT_EQ(core::sharedMemoryThreads(s, on(8, 1024 * MiB), 8), 8);
  EXPECT_EQ(core::sharedMemoryThreads(s, on(8, 256 * MiB), 8), 6);
  EXPECT_EQ(core::localFabricLayout(8, s, on(8, 256 * MiB)).slotBytes, 6 * MiB);
  EXPECT_EQ(core::sharedMemoryThreads(s, on(8, 64 * MiB), 8), 1);
  EXPECT_EQ(core::localFabricLayout(8, s, on(8, 64 * MiB)).slotBytes, 1 * MiB);
  // A count given is taken as given: the region's creation names a /dev/shm too small for it.
  s.shmThreads = "8";
  EXPECT_EQ(core::sharedMemoryThreads(s, on(8, 64 * MiB), 8), 8);
  // Slots of a size given do not shrink with fewer threads, so auto keeps them all.
  s.shmThreads = "auto";
  s.shmSlotBytes = 96 * KiB;
  s.shmP2pBytes = 8 * MiB;
  EXPECT_EQ(core::sharedMemoryThreads(s, on(8, 64 * MiB), 8), 8);
}

TEST(ShmSlot, TheKnobWins) {
  EXPECT_EQ(tuning::shmSlotBytes(16, 64 * KiB), 64 * KiB);
  EXPECT_EQ(tuning::shmSlotBytes(2, 4096 * KiB), 4096 * KiB);
}

TEST(ShmSlot, TheGroupsLayoutTakesIt) {
  Settings s = Settings::fromEnvironment([](const std::string&) { return std::optional<std::string>(); });
  // Ranks bound a core each: one thread a rank (auto), so the slot is the rank count's.
  const auto alone = [](int ranks) { return core::HostLayout{.ranks = ranks, .cpus = ranks}; };
  EXPECT_EQ(core::localFabricLayout(2, s, alone(2)).slotBytes, 256 * KiB);
  EXPECT_EQ(core::localFabricLayout(8, s, alone(8)).slotBytes, 1024 * KiB);
  // Two CPUs a rank: two threads, twice the slot.
  EXPECT_EQ(core::localFabricLayout(8, s, {.ranks = 8, .cpus = 16, .shmBytes = kRoomy}).slotBytes, 2048 * KiB);
  const auto eight = core::localFabricLayout(8, s, alone(8));
  EXPECT_EQ(eight.ringOffset, eight.slotOffset + 2 * eight.slotBytes);
  EXPECT_EQ(eight.regionBytes, eight.ringOffset + 8 * (256 * KiB));  // BRAID_SHM_P2P_BYTES' default
  s.shmSlotBytes = 96 * KiB;
  EXPECT_EQ(core::localFabricLayout(8, s, {.ranks = 8, .cpus = 16}).slotBytes, 96 * KiB);
}

}  // namespace
}  // namespace braid
