// One collective call with inputs whose exact result is known (nccl-tests' method): small integers chosen so
// that every sum, product, min and max is exactly representable in every type, including float16/bfloat16. float8
// rounds some inputs (min and max stay exact: rounding keeps the order) and some sums of 3 or more ranks, which are
// checked against the type's bound instead.
// runCase() makes the inputs from (rank, index), runs the call, and checks every output element, throwing
// std::runtime_error that names the first wrong element.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "braid/braid.hpp"

namespace braid::testing {

enum class Coll {
  kAllreduce,
  kReduce,
  kReduceScatter,
  kBroadcast,
  kAllgather,
  kAllgatherv,
  kAlltoall,
  kAlltoallv,
  kGather,
  kScatter,
  kSendRecv,
  kGroupAllPairs,
  kBarrier,
};

struct Case {
  Coll coll;
  DataType type;
  ReduceKind op = ReduceKind::kSum;
  std::size_t count = 0;  // elements per rank's message (see collective_cases.cpp for each collective)
  bool inPlace = false;
  int root = 0;
  bool async = false;
};

const std::vector<Coll>& allColls();
const char* collName(Coll c);
bool reduces(Coll c);
bool supportsInPlace(Coll c);
/// The reduce ops braid defines for `type`, from the support table of reduce_support.hpp (not from the library).
std::vector<ReduceKind> opsFor(DataType type);
std::string describe(const Case& c);

void runCase(Communicator& comm, const Case& c);

/// Throws std::runtime_error(message) when !ok.
void require(bool ok, const std::string& message);

}  // namespace braid::testing
