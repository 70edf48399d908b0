// Uses braid through its installed headers only: one rank, one allreduce, and the C ABI's names.
#include <braid/braid.h>

#include <braid/braid.hpp>
#include <cstdio>

int main() {
  const braid::UniqueId id = braid::Communicator::uniqueId();
  auto comm = braid::Communicator::create(id, 0, 1);
  int v[3] = {1, 2, 3};
  comm->allreduce(v, v, 3, braid::DataType::kInt32, braid::ReduceKind::kSum);
  std::printf("consumer ok: %d %d %d, %s\n", v[0], v[1], v[2], braid_result_string(BRAID_SUCCESS));
  return v[0] == 1 && v[2] == 3 ? 0 : 1;
}
