// The host copies of a staged or detached call's device buffers (algorithms/staging_layout.hpp): aliasing kept, each
// range copied in or back once, copies aligned and apart.
#include "algorithms/staging_layout.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace braid {
namespace {

const void* at(std::uintptr_t address) { return reinterpret_cast<const void*>(address); }

TEST(StagingLayout, OutOfPlaceBuffersGetAlignedCopiesOfTheirOwn) {
  const std::vector<DeviceExtent> extents = {{at(0x1000), 100, true, false}, {at(0x9000), 100, false, true}};
  const StagingLayout layout = layOutStaging(extents);
  ASSERT_EQ(layout.offsets.size(), 2u);
  EXPECT_EQ(layout.offsets[0], 0u);
  EXPECT_EQ(layout.offsets[1], 128u);
  EXPECT_EQ(layout.arenaBytes, 228u);
  ASSERT_EQ(layout.copiesIn.size(), 1u);
  EXPECT_EQ(layout.copiesIn[0].device, 0x1000u);
  ASSERT_EQ(layout.copiesOut.size(), 1u);
  EXPECT_EQ(layout.copiesOut[0].device, 0x9000u);
  EXPECT_EQ(layout.copiesOut[0].offset, 128u);
}

TEST(StagingLayout, InPlaceSharesOneCopyInAndBack) {
  const std::vector<DeviceExtent> extents = {{at(0x1000), 64, true, false}, {at(0x1000), 64, false, true}};
  const StagingLayout layout = layOutStaging(extents);
  EXPECT_EQ(layout.offsets[0], layout.offsets[1]);
  EXPECT_EQ(layout.arenaBytes, 64u);
  EXPECT_EQ(layout.copiesIn.size(), 1u);
  EXPECT_EQ(layout.copiesOut.size(), 1u);
}

// An in-place allgather: rank 2's send is its block of recv.
TEST(StagingLayout, ABufferInsideAnotherLiesInsideItsCopy) {
  const std::vector<DeviceExtent> extents = {{at(0x1000 + 2 * 40), 40, true, false}, {at(0x1000), 160, false, true}};
  const StagingLayout layout = layOutStaging(extents);
  EXPECT_EQ(layout.offsets[1], 0u);
  EXPECT_EQ(layout.offsets[0], 80u);
  EXPECT_EQ(layout.arenaBytes, 160u);
  ASSERT_EQ(layout.copiesIn.size(), 1u);
  EXPECT_EQ(layout.copiesIn[0].offset, 80u);
  EXPECT_EQ(layout.copiesIn[0].bytes, 40u);
  ASSERT_EQ(layout.copiesOut.size(), 1u);
  EXPECT_EQ(layout.copiesOut[0].bytes, 160u);
}

TEST(StagingLayout, NullAndEmptyBuffersCopyNothing) {
  const std::vector<DeviceExtent> extents = {
      {nullptr, 64, false, true}, {at(0x2000), 0, true, false}, {at(0x3000), 8, true, true}};
  const StagingLayout layout = layOutStaging(extents);
  EXPECT_EQ(layout.offsets[0], StagingLayout::kNone);
  EXPECT_NE(layout.offsets[1], StagingLayout::kNone);
  ASSERT_EQ(layout.copiesIn.size(), 1u);
  EXPECT_EQ(layout.copiesIn[0].device, 0x3000u);
  ASSERT_EQ(layout.copiesOut.size(), 1u);
  EXPECT_EQ(layout.copiesOut[0].device, 0x3000u);
}

// Point-to-point groups: two receives into distinct halves of one buffer go back separately, and a written range
// inside a larger written one goes back with it.
TEST(StagingLayout, WrittenRangesGoBackOnce) {
  const std::vector<DeviceExtent> extents = {{at(0x1000), 32, false, true},
                                             {at(0x1020), 32, false, true},
                                             {at(0x4000), 256, false, true},
                                             {at(0x4040), 16, false, true}};
  const StagingLayout layout = layOutStaging(extents);
  ASSERT_EQ(layout.copiesOut.size(), 3u);
  EXPECT_EQ(layout.copiesOut[0].device, 0x1000u);
  EXPECT_EQ(layout.copiesOut[1].device, 0x1020u);
  EXPECT_EQ(layout.copiesOut[2].device, 0x4000u);
  EXPECT_EQ(layout.offsets[3], layout.offsets[2] + 0x40);
  // Copies of their own never overlap.
  EXPECT_GE(layout.offsets[1], layout.offsets[0] + 32);
  EXPECT_EQ(layout.offsets[1] % 64, 0u);
}

// A written range inside two that overlap each other (a read one, placed first, and a written one): its result lands
// in the read one's copy, so it goes back itself, after the written one that holds a stale copy of it.
TEST(StagingLayout, ARangeGoesBackFromTheCopyItWasPlacedIn) {
  const std::vector<DeviceExtent> extents = {
      {at(0x1000), 100, true, false}, {at(0x1040), 100, false, true}, {at(0x1040), 20, false, true}};
  const StagingLayout layout = layOutStaging(extents);
  EXPECT_EQ(layout.offsets[2], layout.offsets[0] + 0x40);
  EXPECT_NE(layout.offsets[1], layout.offsets[0] + 0x40);
  ASSERT_EQ(layout.copiesOut.size(), 2u);
  EXPECT_EQ(layout.copiesOut[0].offset, layout.offsets[1]);
  EXPECT_EQ(layout.copiesOut[1].device, 0x1040u);
  EXPECT_EQ(layout.copiesOut[1].offset, layout.offsets[2]);
}

}  // namespace
}  // namespace braid
