// The collective x dtype x op x size x in-place matrix, as one body that every rank runs in the same order.
#pragma once

#include "support/collective_cases.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {

/// Every dtype, every op braid defines for it (reducing collectives), sizes {0, 1, 7, 1023, 1 MiB + 3} elements,
/// in place and out of place where the collective has an in-place form; roots and async forms rotate.
Body matrixBody(Coll coll, int ranks);

/// A deterministic sample for ranks as processes: every (collective, dtype) pair once per world size, ops rotating,
/// sizes rotating through {0, 1, 1023, 64 KiB + 3, 16 MiB} bytes worth of elements, in place where it applies.
std::vector<Case> sampledCases(int ranks);

}  // namespace braid::testing
