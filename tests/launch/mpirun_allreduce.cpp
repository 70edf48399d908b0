// One rank of a real `mpirun -np 3` job (registered with ctest where Open MPI's mpirun exists): it must find rank
// 0's store through PMIx, with no BRAID_ROOT_ADDR, create its communicator from the environment and allreduce.
// Exits 0 on success, 1 with a line naming the failure; BRAID_TIMEOUT bounds every wait, so it fails, never hangs.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/config.hpp"
#include "base/error.hpp"
#include "bootstrap/launch_env.hpp"
#include "braid/braid.hpp"

namespace {

int envInt(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) braid::fail(braid::ErrorCode::kInvalidArgument, {}, name, " is not set: not under mpirun?");
  return std::atoi(value);
}

void require(bool ok, const std::string& what) {
  if (!ok) braid::fail(braid::ErrorCode::kInternal, {}, "check failed: ", what);
}

}  // namespace

int main() {
  std::string where = "rank ?";
  try {
    const int ompiRank = envInt("OMPI_COMM_WORLD_RANK");
    const int ompiSize = envInt("OMPI_COMM_WORLD_SIZE");
    where = braid::strCat("rank ", ompiRank);
    require(std::getenv("BRAID_ROOT_ADDR") == nullptr && std::getenv("BRAID_RANK") == nullptr,
            "BRAID_ROOT_ADDR and BRAID_RANK are unset (the test is about finding the root without them)");
    const auto id = braid::bootstrap::readLaunchIdentity(braid::Settings::fromEnvironment());
    require(id.launcher == "mpirun", "launcher is mpirun, not " + id.launcher);
    require(id.rootViaPmix, "the root address comes through PMIx");
    require(id.rank == ompiRank && id.size == ompiSize, "identity matches OMPI_COMM_WORLD_RANK/SIZE");
    require(id.localRank == envInt("OMPI_COMM_WORLD_LOCAL_RANK"), "local rank matches");

    // Two communicators one after another: the second PMIx exchange must not see the first one's address.
    for (int round = 0; round < 2; ++round) {
      auto comm = braid::Communicator::fromEnvironment();
      require(comm->rank() == ompiRank && comm->size() == ompiSize,
              braid::strCat("communicator rank/size ", comm->rank(), "/", comm->size(), " match OMPI's"));
      std::int32_t value = comm->rank() + 1;
      comm->allreduce(&value, &value, 1, braid::DataType::kInt32, braid::ReduceKind::kSum);
      require(value == ompiSize * (ompiSize + 1) / 2, braid::strCat("allreduce of rank+1 gave ", value));
      comm->barrier();
    }
    std::printf("%s of %d: ok, root found through PMIx\n", where.c_str(), ompiSize);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: FAILED: %s\n", where.c_str(), e.what());
    return 1;
  }
}
