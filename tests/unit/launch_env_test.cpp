// The launch identity from each launcher's environment (fixtures of what braid run, torchrun, mpirun and srun set),
// their precedence, malformed values, and Slurm host lists. Pure parsing: nothing listens or loads libpmix.
#include "bootstrap/launch_env.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/error.hpp"
#include "bootstrap/slurm_hostlist.hpp"
#include "support/env_lookup.hpp"

namespace braid::bootstrap {
namespace {

using testing::lookupOf;
using testing::Vars;

// Settings and launcher variables from one map, as a real environment would hold them.
LaunchIdentity identityOf(
    const Vars& vars, const PmixProbe& probe = [] { return std::string(); }) {
  return readLaunchIdentity(Settings::fromEnvironment(lookupOf(vars)), lookupOf(vars), probe);
}

// The InvalidArgument message identityOf(vars) throws ("" when it does not throw).
std::string errorOf(
    const Vars& vars, const PmixProbe& probe = [] { return std::string(); }) {
  try {
    identityOf(vars, probe);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.message();
  }
  return "";
}

const Vars kBraidRun = {{"BRAID_RANK", "1"},
                        {"BRAID_WORLD_SIZE", "4"},
                        {"BRAID_LOCAL_RANK", "1"},
                        {"BRAID_ROOT_ADDR", "127.0.0.1:4000"},
                        {"BRAID_TOKEN", "00112233445566778899aabbccddeeff"},
                        {"RANK", "1"},
                        {"WORLD_SIZE", "4"},
                        {"MASTER_ADDR", "127.0.0.1"},
                        {"MASTER_PORT", "3999"}};

const Vars kTorchrun = {{"RANK", "5"},
                        {"WORLD_SIZE", "8"},
                        {"LOCAL_RANK", "1"},
                        {"LOCAL_WORLD_SIZE", "4"},
                        {"MASTER_ADDR", "node01"},
                        {"MASTER_PORT", "29500"},
                        {"TORCHELASTIC_RUN_ID", "job7"}};

const Vars kMpirun = {{"OMPI_COMM_WORLD_RANK", "2"},
                      {"OMPI_COMM_WORLD_SIZE", "3"},
                      {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
                      {"PMIX_RANK", "2"},
                      {"PMIX_NAMESPACE", "1468465153"}};

const Vars kSrun = {{"SLURM_PROCID", "3"},
                    {"SLURM_NTASKS", "6"},
                    {"SLURM_LOCALID", "1"},
                    {"SLURM_NODEID", "1"},
                    {"SLURM_STEP_TASKS_PER_NODE", "2(x3)"},
                    {"SLURM_STEP_NODELIST", "node[01-03]"},
                    {"SLURM_JOB_NODELIST", "node[01-04]"},
                    {"SLURM_JOB_ID", "811"},
                    {"SLURM_STEP_ID", "0"}};

Vars with(Vars vars, const Vars& changes) {
  for (const auto& [name, value] : changes) vars[name] = value;
  return vars;
}

Vars without(Vars vars, const std::string& name) {
  vars.erase(name);
  return vars;
}

TEST(LaunchEnv, BraidRunVariables) {
  const LaunchIdentity id = identityOf(kBraidRun);
  EXPECT_EQ(id.launcher, "braid");
  EXPECT_EQ(id.rank, 1);
  EXPECT_EQ(id.size, 4);
  EXPECT_EQ(id.localRank, 1);
  EXPECT_EQ(id.localSize, -1);
  EXPECT_EQ(id.root, (tcp::Address{"127.0.0.1", 4000}));
  EXPECT_EQ(id.bind, id.root);
  EXPECT_FALSE(id.rootViaPmix);
  EXPECT_EQ(id.token, "00112233445566778899aabbccddeeff");
}

TEST(LaunchEnv, Torchrun) {
  const LaunchIdentity id = identityOf(kTorchrun);
  EXPECT_EQ(id.launcher, "torchrun");
  EXPECT_EQ(id.rank, 5);
  EXPECT_EQ(id.size, 8);
  EXPECT_EQ(id.localRank, 1);
  EXPECT_EQ(id.localSize, 4);
  // torchrun's own store has MASTER_PORT; braid's takes the next one and listens on every interface.
  EXPECT_EQ(id.root, (tcp::Address{"node01", 29501}));
  EXPECT_EQ(id.bind, (tcp::Address{"0.0.0.0", 29501}));
  EXPECT_EQ(id.token, "torchrun-job7");
  EXPECT_EQ(identityOf(with(kTorchrun, {{"MASTER_ADDR", "[fd00::1]"}})).bind, (tcp::Address{"::", 29501}));
  EXPECT_EQ(identityOf(with(kTorchrun, {{"MASTER_ADDR", "[fd00::1]"}})).root.host, "fd00::1");
  // Without LOCAL_* (torchrun always sets them, but a hand-made environment may not).
  const LaunchIdentity bare = identityOf(without(without(kTorchrun, "LOCAL_RANK"), "LOCAL_WORLD_SIZE"));
  EXPECT_EQ(bare.localRank, -1);
  EXPECT_EQ(bare.localSize, -1);
}

TEST(LaunchEnv, MpirunThroughPmix) {
  const LaunchIdentity id = identityOf(kMpirun);
  EXPECT_EQ(id.launcher, "mpirun");
  EXPECT_EQ(id.rank, 2);
  EXPECT_EQ(id.size, 3);
  EXPECT_EQ(id.localRank, 2);
  EXPECT_EQ(id.localSize, 3);
  EXPECT_TRUE(id.rootViaPmix);
  EXPECT_EQ(id.root.host, "");
}

TEST(LaunchEnv, MpirunWithoutPmixNeedsRootAddr) {
  // No PMIx variables (an Open MPI without PMIx, or a hand-made environment).
  const Vars noPmix = without(without(kMpirun, "PMIX_RANK"), "PMIX_NAMESPACE");
  EXPECT_NE(errorOf(noPmix).find("BRAID_ROOT_ADDR is not set"), std::string::npos) << errorOf(noPmix);
  EXPECT_NE(errorOf(noPmix).find("PMIX_RANK and PMIX_NAMESPACE"), std::string::npos) << errorOf(noPmix);
  // PMIx variables but no loadable libpmix: the probe's reason is in the message.
  const auto missingLib = [] { return std::string("cannot load libpmix.so.2: not found"); };
  EXPECT_NE(errorOf(kMpirun, missingLib).find("cannot load libpmix.so.2"), std::string::npos);
  // Either way BRAID_ROOT_ADDR makes it work, and wins over PMIx when both are there.
  for (const Vars& vars : {noPmix, kMpirun}) {
    const LaunchIdentity id = identityOf(with(vars, {{"BRAID_ROOT_ADDR", "10.0.0.1:7000"}}), missingLib);
    EXPECT_EQ(id.launcher, "mpirun");
    EXPECT_FALSE(id.rootViaPmix);
    EXPECT_EQ(id.root, (tcp::Address{"10.0.0.1", 7000}));
    EXPECT_EQ(id.bind, id.root);
  }
}

TEST(LaunchEnv, Srun) {
  const LaunchIdentity id = identityOf(kSrun);
  EXPECT_EQ(id.launcher, "slurm");
  EXPECT_EQ(id.rank, 3);
  EXPECT_EQ(id.size, 6);
  EXPECT_EQ(id.localRank, 1);
  EXPECT_EQ(id.localSize, 2);
  EXPECT_EQ(id.root, (tcp::Address{"node01", 29517}));  // the step's first host at BRAID_PORT's default
  EXPECT_EQ(id.bind, (tcp::Address{"0.0.0.0", 29517}));
  EXPECT_EQ(id.token, "slurm-811.0");
  EXPECT_EQ(identityOf(with(kSrun, {{"BRAID_PORT", "6000"}})).root.port, 6000);
  EXPECT_EQ(identityOf(with(kSrun, {{"BRAID_TOKEN", "00112233445566778899aabbccddeeff"}})).token,
            "00112233445566778899aabbccddeeff");
  // Uneven tasks per node: node 2 of "2(x2),1" has one task.
  EXPECT_EQ(identityOf(with(kSrun, {{"SLURM_NODEID", "2"},
                                    {"SLURM_LOCALID", "0"},
                                    {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
                                    {"SLURM_NTASKS", "5"}}))
                .localSize,
            1);
  // The job's node list when the step's is missing; unknown local size without the per-node counts.
  const Vars jobList = without(without(kSrun, "SLURM_STEP_NODELIST"), "SLURM_STEP_TASKS_PER_NODE");
  EXPECT_EQ(identityOf(jobList).root.host, "node01");
  EXPECT_EQ(identityOf(jobList).localSize, -1);
  const Vars noList = without(jobList, "SLURM_JOB_NODELIST");
  EXPECT_NE(errorOf(noList).find("SLURM_JOB_NODELIST is not set"), std::string::npos) << errorOf(noList);
  EXPECT_EQ(identityOf(with(noList, {{"BRAID_ROOT_ADDR", "h:1"}})).root, (tcp::Address{"h", 1}));
}

TEST(LaunchEnv, Precedence) {
  // braid run sets torchrun's variables too: BRAID_* wins.
  EXPECT_EQ(identityOf(with(kTorchrun, kBraidRun)).launcher, "braid");
  // torchrun under srun, and mpirun inside an allocation (SLURM_PROCID inherited from the batch step).
  EXPECT_EQ(identityOf(with(kSrun, kTorchrun)).launcher, "torchrun");
  EXPECT_EQ(identityOf(with(kSrun, kMpirun)).launcher, "mpirun");
  EXPECT_EQ(identityOf(with(kMpirun, kTorchrun)).launcher, "torchrun");
  // BRAID_ROOT_ADDR overrides every derived root, and is where rank 0 binds.
  for (const Vars& vars : {kTorchrun, kSrun, kMpirun}) {
    const LaunchIdentity id = identityOf(with(vars, {{"BRAID_ROOT_ADDR", "[::1]:5000"}}));
    EXPECT_EQ(id.root, (tcp::Address{"::1", 5000})) << id.launcher;
    EXPECT_EQ(id.bind, id.root) << id.launcher;
    EXPECT_FALSE(id.rootViaPmix) << id.launcher;
  }
  // Half of torchrun's pair is not torchrun: mpirun's variables decide.
  EXPECT_EQ(identityOf(with(kMpirun, {{"RANK", "0"}})).launcher, "mpirun");
  EXPECT_NE(errorOf({}).find("no launcher environment found"), std::string::npos) << errorOf({});
}

TEST(LaunchEnv, MalformedValuesNameVariableAndValue) {
  EXPECT_EQ(errorOf(with(kSrun, {{"SLURM_NTASKS", "x"}})), "SLURM_NTASKS='x' is not an integer >= 1");
  EXPECT_EQ(errorOf(with(kSrun, {{"SLURM_NTASKS", "0"}})), "SLURM_NTASKS='0' is not an integer >= 1");
  EXPECT_EQ(errorOf(with(kSrun, {{"SLURM_PROCID", "6"}})), "SLURM_PROCID=6 is not below SLURM_NTASKS=6");
  EXPECT_EQ(errorOf(with(kSrun, {{"SLURM_LOCALID", "2"}})), "SLURM_LOCALID=2 is not below SLURM_STEP_TASKS_PER_NODE=2");
  EXPECT_EQ(errorOf(with(kSrun, {{"SLURM_STEP_TASKS_PER_NODE", "2(x"}})),
            "SLURM_STEP_TASKS_PER_NODE='2(x' is not a Slurm tasks-per-node list");
  EXPECT_EQ(errorOf(with(kSrun, {{"BRAID_PORT", "70000"}})), "BRAID_PORT=70000 is not a TCP port (1..65535)");
  EXPECT_EQ(errorOf(with(kSrun, {{"SLURM_STEP_NODELIST", "node[3-1]"}})),
            "SLURM_STEP_NODELIST='node[3-1]' is not a Slurm host list: range 3-1 runs backwards");
  EXPECT_EQ(errorOf(with(kTorchrun, {{"RANK", "-1"}})), "RANK='-1' is not an integer >= 0");
  EXPECT_EQ(errorOf(with(kTorchrun, {{"RANK", "8"}})), "RANK=8 is not below WORLD_SIZE=8");
  EXPECT_EQ(errorOf(with(kTorchrun, {{"WORLD_SIZE", "4 "}})), "WORLD_SIZE='4 ' is not an integer >= 1");
  EXPECT_EQ(errorOf(with(kTorchrun, {{"LOCAL_RANK", "4"}})), "LOCAL_RANK=4 is not below LOCAL_WORLD_SIZE=4");
  EXPECT_EQ(errorOf(with(kTorchrun, {{"MASTER_PORT", "http"}})), "MASTER_PORT='http' is not an integer >= 1");
  EXPECT_NE(errorOf(with(kTorchrun, {{"MASTER_PORT", "65535"}})).find("MASTER_PORT + 1"), std::string::npos);
  EXPECT_EQ(errorOf(without(kTorchrun, "MASTER_ADDR")),
            "MASTER_ADDR is not set (torchrun sets it; or set BRAID_ROOT_ADDR=HOST:PORT)");
  EXPECT_EQ(errorOf(with(kMpirun, {{"OMPI_COMM_WORLD_RANK", "3"}})),
            "OMPI_COMM_WORLD_RANK=3 is not below OMPI_COMM_WORLD_SIZE=3");
  EXPECT_EQ(errorOf(with(kBraidRun, {{"BRAID_RANK", "4"}})), "BRAID_RANK=4 is not below BRAID_WORLD_SIZE=4");
  EXPECT_NE(errorOf(without(kBraidRun, "BRAID_ROOT_ADDR")).find("BRAID_ROOT_ADDR is not set"), std::string::npos);
  EXPECT_NE(errorOf(with(kBraidRun, {{"BRAID_ROOT_ADDR", "nohost"}})).find("malformed address 'nohost'"),
            std::string::npos);
  // BRAID_TOKEN is a 128-bit secret: 32 hex digits or more.
  EXPECT_NE(errorOf(with(kBraidRun, {{"BRAID_TOKEN", "secret"}})).find("at least 32 hex digits"), std::string::npos);
  EXPECT_NE(errorOf(with(kBraidRun, {{"BRAID_TOKEN", std::string(32, 'z')}})).find("not all hex digits"),
            std::string::npos);
}

std::vector<std::string> expand(const std::string& list) { return expandSlurmHostlist(list, 100); }

std::string hostlistError(const std::string& list) {
  try {
    expandSlurmHostlist(list, 100, "L");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.message();
  }
  return "";
}

TEST(SlurmHostlist, Expands) {
  using V = std::vector<std::string>;
  EXPECT_EQ(expand("node[01-03,07],gpu-a,x[1-2]-ib"),
            (V{"node01", "node02", "node03", "node07", "gpu-a", "x1-ib", "x2-ib"}));
  EXPECT_EQ(firstSlurmHost("node[01-03,07],gpu-a,x[1-2]-ib"), "node01");
  EXPECT_EQ(expand("single"), V{"single"});
  EXPECT_EQ(expand("n[5]"), V{"n5"});
  EXPECT_EQ(expand("n[08-10]"), (V{"n08", "n09", "n10"}));  // padding of the lower bound, kept past 9
  EXPECT_EQ(expand("n[9-11]"), (V{"n9", "n10", "n11"}));    // no padding when the bound has none
  EXPECT_EQ(expand("[1-2]n"), (V{"1n", "2n"}));             // a group may come first
  EXPECT_EQ(expand("r[1-2]-n[1-2]"), (V{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}));  // the last group varies fastest
  EXPECT_EQ(expand("a.b-c_d,e"), (V{"a.b-c_d", "e"}));
  EXPECT_EQ(firstSlurmHost("big[000001-999999]"), "big000001");  // the limit stops a huge expansion early
  EXPECT_EQ(expandSlurmHostlist("n[1-9]", 3), (V{"n1", "n2", "n3"}));
}

TEST(SlurmHostlist, RejectsMalformed) {
  EXPECT_EQ(hostlistError(""), "L='' is not a Slurm host list: it is empty");
  EXPECT_EQ(hostlistError("n[1-2"), "L='n[1-2' is not a Slurm host list: '[' at offset 1 has no ']'");
  EXPECT_EQ(hostlistError("n1-2]"), "L='n1-2]' is not a Slurm host list: ']' without '[' at offset 4");
  EXPECT_EQ(hostlistError("n[[1]]"), "L='n[[1]]' is not a Slurm host list: nested '[' after offset 1");
  EXPECT_EQ(hostlistError("n[]"), "L='n[]' is not a Slurm host list: empty brackets at offset 1");
  EXPECT_EQ(hostlistError("a,,b"), "L='a,,b' is not a Slurm host list: empty host name at offset 2");
  EXPECT_EQ(hostlistError("a,"), "L='a,' is not a Slurm host list: empty host name at offset 2");
  EXPECT_EQ(hostlistError("n[1-x]"), "L='n[1-x]' is not a Slurm host list: '1-x' is not a number or a range LO-HI");
  EXPECT_EQ(hostlistError("n[1,]"), "L='n[1,]' is not a Slurm host list: '' is not a number or a range LO-HI");
  EXPECT_EQ(hostlistError("n[-3]"), "L='n[-3]' is not a Slurm host list: '-3' is not a number or a range LO-HI");
  EXPECT_EQ(hostlistError("n[2-1]"), "L='n[2-1]' is not a Slurm host list: range 2-1 runs backwards");
  // The whole list is checked even though only the first host is used.
  EXPECT_NE(hostlistError("good,bad[").find("has no ']'"), std::string::npos);
  EXPECT_THROW(firstSlurmHost("good,bad["), Error);
}

}  // namespace
}  // namespace braid::bootstrap
