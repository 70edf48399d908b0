// A loopback TCP port nothing listens on right now, for tests that start a store or root at a fixed address.
// (Another process may take it before the test binds it: rare enough on a test machine.)
#pragma once

#include <cstdint>

namespace braid::testing {

std::uint16_t freePort();

}  // namespace braid::testing
