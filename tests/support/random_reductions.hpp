// Reductions of random floating-point inputs, checked against a float64 reference with the error bound of the
// type (the other half of nccl-tests' method: collective_cases.hpp covers exact-sum inputs to 0 ulp). Every rank
// makes every rank's inputs from (seed, rank, index) alone, so each can compute the reference for its whole
// output. An allreduce must also give every rank the same bits: the ranks compare a hash of their results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "braid/braid.hpp"

namespace braid::testing {

enum class RandomColl { kAllreduce, kReduce, kReduceScatter };

struct RandomCase {
  RandomColl coll = RandomColl::kAllreduce;
  DataType type = DataType::kFloat32;  // float32, float64, float16, bfloat16, float8_e4m3 or float8_e5m2
  ReduceKind op = ReduceKind::kSum;    // sum, avg, prod, min or max
  std::size_t count = 0;               // elements of the result (reduce_scatter: of each rank's block)
  bool inPlace = false;
  int root = 0;
  std::uint64_t seed = 0;
};

std::string describe(const RandomCase& c);

/// Runs the call on `comm` (every rank with the same case) and throws std::runtime_error naming the first element
/// outside the bound, or a rank whose allreduce result differs from rank 0's in any bit.
void runRandomCase(Communicator& comm, const RandomCase& c);

/// The largest |got - reference| allowed for an element reduced over `n` ranks in `type`: the sum bound of
/// recursive summation in any order, n * u * sum|x_i|, plus the output's rounding u * |reference| (u: the type's
/// unit roundoff); products: 2n * u * |reference|; min and max: exact.
double allowedError(DataType type, ReduceKind op, int n, double sumOfMagnitudes, double reference);

}  // namespace braid::testing
