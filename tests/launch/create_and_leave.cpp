// One rank of a `braid run` job that creates its communicator from the environment and leaves at once: rank 0, which
// hosts the job's store, destroys its communicator as soon as it has one, while its peers may still be reading the
// store to finish their own creation. Every rank's creation must succeed all the same. Exits 0 on success, 1 with a
// line naming the failure.
#include <cstdio>

#include "braid/braid.hpp"

int main() {
  try {
    auto comm = braid::Communicator::fromEnvironment();
    comm.reset();
  } catch (const braid::Error& e) {
    std::fprintf(stderr, "create_and_leave: %s\n", e.what());
    return 1;
  }
  return 0;
}
