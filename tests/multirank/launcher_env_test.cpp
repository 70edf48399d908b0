// Communicator::fromEnvironment() in forked ranks given the environment torchrun or srun would give them (mpirun's
// real run is tests/launch/mpirun_allreduce.cpp, under ctest when mpirun exists).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>

#include "base/error.hpp"
#include "braid/braid.hpp"
#include "support/free_port.hpp"
#include "support/rank_runner.hpp"
#include "transport/tcp/socket.hpp"

namespace braid::testing {
namespace {

// In each forked rank: clears every launcher's variables, sets `vars(rank)`, creates the communicator from the
// environment and checks an allreduce of rank + 1.
std::string allreduceFromEnvironment(int rank, int size, const std::map<std::string, std::string>& vars) {
  for (const char* name : {"BRAID_RANK", "BRAID_WORLD_SIZE", "BRAID_ROOT_ADDR", "BRAID_LOCAL_RANK", "BRAID_TOKEN",
                           "RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID"}) {
    ::unsetenv(name);
  }
  for (const auto& [name, value] : vars) ::setenv(name.c_str(), value.c_str(), 1);
  ::setenv("BRAID_TIMEOUT", "30", 1);
  auto comm = Communicator::fromEnvironment();
  std::int32_t v = comm->rank() + 1;
  comm->allreduce(&v, &v, 1, DataType::kInt32, ReduceKind::kSum);
  comm->barrier();
  if (comm->rank() != rank || comm->size() != size) return strCat("rank/size ", comm->rank(), "/", comm->size());
  if (v != size * (size + 1) / 2) return strCat("sum ", v);
  return "";
}

TEST(LauncherEnvironment, Torchrun) {
  const std::string masterPort = std::to_string(freePort() - 1);
  const auto results = forkRanks(
      3,
      [&](int r) {
        return allreduceFromEnvironment(r, 3,
                                        {{"RANK", std::to_string(r)},
                                         {"WORLD_SIZE", "3"},
                                         {"LOCAL_RANK", std::to_string(r)},
                                         {"LOCAL_WORLD_SIZE", "3"},
                                         {"MASTER_ADDR", "localhost"},
                                         {"MASTER_PORT", masterPort}});
      },
      60);
  EXPECT_EQ(failures(results), "");
}

TEST(LauncherEnvironment, Srun) {
  const std::string port = std::to_string(freePort());
  const auto results = forkRanks(
      2,
      [&](int r) {
        return allreduceFromEnvironment(r, 2,
                                        {{"SLURM_PROCID", std::to_string(r)},
                                         {"SLURM_NTASKS", "2"},
                                         {"SLURM_LOCALID", std::to_string(r)},
                                         {"SLURM_STEP_NODELIST", "127.0.0.[1-3]"},
                                         {"SLURM_JOB_ID", "42"},
                                         {"SLURM_STEP_ID", "0"},
                                         {"BRAID_PORT", port}});
      },
      60);
  EXPECT_EQ(failures(results), "");
}

}  // namespace
}  // namespace braid::testing
