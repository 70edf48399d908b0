// The registered regions the network transport keeps (docs/NETWORK.md): what lies in one, and what does not.
#include <gtest/gtest.h>

#include <vector>

#include "transport/region.hpp"

namespace braid::transport {
namespace {

TEST(RegionTable, FindsTheRegionThatHoldsAWholeRange) {
  std::vector<std::byte> a(1000), b(64);
  RegionTable table;
  EXPECT_EQ(table.find(a.data(), 1), nullptr);
  const Region* ra = table.add(a.data(), a.size(), RegionMemory::kHost);
  const Region* rb = table.add(b.data(), b.size(), RegionMemory::kPinnedHost, 42);
  EXPECT_EQ(table.find(a.data(), 1000), ra);
  EXPECT_EQ(table.find(a.data() + 999, 1), ra);
  EXPECT_EQ(table.find(a.data() + 500, 0), ra);
  EXPECT_EQ(table.find(a.data() + 1, 1000), nullptr);  // one byte past the end
  EXPECT_EQ(table.find(a.data() + 1000, 1), nullptr);
  EXPECT_EQ(table.find(b.data() + 8, 56), rb);
  EXPECT_EQ(rb->handle, 42u);
  EXPECT_EQ(rb->memory, RegionMemory::kPinnedHost);
  // A range whose length would wrap the address space is in no region.
  EXPECT_EQ(table.find(a.data() + 10, static_cast<std::size_t>(-5)), nullptr);
  table.remove(ra);
  EXPECT_EQ(table.find(a.data(), 1), nullptr);
  EXPECT_EQ(table.find(b.data(), 64), rb);
  table.remove(nullptr);
  EXPECT_EQ(table.size(), 1u);
}

TEST(RegionTable, OverlappingRegionsGiveTheNewest) {
  std::vector<std::byte> a(4096);
  RegionTable table;
  const Region* whole = table.add(a.data(), a.size(), RegionMemory::kHost);
  const Region* part = table.add(a.data() + 1024, 1024, RegionMemory::kDevice);
  EXPECT_EQ(table.find(a.data() + 1024, 512), part);
  EXPECT_EQ(table.find(a.data() + 1000, 512), whole);  // straddles part's start: only whole holds it
  table.remove(part);
  EXPECT_EQ(table.find(a.data() + 1024, 512), whole);
}

}  // namespace
}  // namespace braid::transport
