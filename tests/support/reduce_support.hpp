// Which reduce ops braid defines on which data types, as braid/types.hpp documents them, written out here and not
// asked of the library: an op the library wrongly refused would otherwise drop out of every test matrix unseen.
#pragma once

#include "braid/types.hpp"

namespace braid::testing {

/// True when `kind` on `type` must be accepted (a premul_sum with an integral scale on integer types).
bool expectReduceSupported(DataType type, ReduceKind kind);

}  // namespace braid::testing
