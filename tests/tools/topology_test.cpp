// Topology: host detection reads a fake procfs/sysfs tree right; JSON round-trips every fixture
// machine; `braid detect`'s report of each fixture matches its golden file; the derived answers (NVLink
// everywhere, P2P everywhere, fastest NIC) hold on each.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "base/error.hpp"
#include "core/explain_call.hpp"
#include "topology/cgroup_limits.hpp"
#include "topology/detect_report.hpp"
#include "topology/doctor_checks.hpp"
#include "topology/env_advice.hpp"
#include "topology/plan_memory.hpp"
#include "topology/topology_json.hpp"

namespace braid::tools {
namespace {

namespace fs = std::filesystem;

std::string fixtures() { return std::string(BRAID_FIXTURES_DIR) + "/topology"; }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr const char* kMachines[] = {"h200x2-nvlink", "dgx-h100-nvswitch", "pcie-broken-p2p", "a100-mig", "cpu-vm"};

TEST(Topology, EveryFixtureRoundTripsThroughJson) {
  for (const char* machine : kMachines) {
    const std::string path = fixtures() + "/" + machine + ".json";
    const topology::Topology t = loadTopology(path);
    const std::string once = topologyToJson(t);
    EXPECT_EQ(topologyToJson(topologyFromJson(once, "round trip")), once) << machine;
  }
}

TEST(Topology, DetectReportOfEveryFixtureMatchesItsGoldenFile) {
  for (const char* machine : kMachines) {
    const std::string base = fixtures() + "/" + machine;
    EXPECT_EQ(detectReport(loadTopology(base + ".json")), slurp(base + ".detect.txt"))
        << machine << ": regenerate with `braid detect --topology " << base << ".json > " << base << ".detect.txt`"
        << " after checking the new output";
  }
}

TEST(Topology, DerivedAnswersOnTheFixtures) {
  const auto load = [](const char* m) { return loadTopology(fixtures() + "/" + m + ".json"); };
  const auto h200 = load("h200x2-nvlink");
  EXPECT_TRUE(h200.allNvlink());
  EXPECT_TRUE(h200.allP2p());
  const auto dgx = load("dgx-h100-nvswitch");
  EXPECT_TRUE(dgx.allNvlink());
  ASSERT_NE(dgx.fastestNic(), nullptr);
  EXPECT_EQ(dgx.fastestNic()->speedMbps, 400000);
  const auto pcie = load("pcie-broken-p2p");
  EXPECT_FALSE(pcie.allNvlink());
  EXPECT_FALSE(pcie.allP2p());
  ASSERT_NE(pcie.pair(1, 0), nullptr);  // either order
  EXPECT_TRUE(pcie.pair(1, 0)->p2p);
  EXPECT_FALSE(pcie.pair(0, 2)->p2p);
  const auto cpu = load("cpu-vm");
  EXPECT_FALSE(cpu.allNvlink());
  EXPECT_TRUE(cpu.allP2p());  // vacuously: no GPUs
  EXPECT_NE(detectReport(cpu).find("GPUs: none"), std::string::npos);
}

TEST(Topology, ABrokenFileIsRefusedByName) {
  try {
    topologyFromJson("{\"gpus\": 3}", "broken.json");
    FAIL() << "a malformed topology was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("broken.json"), std::string::npos) << e.what();
  }
  try {
    loadTopology("/nonexistent/machine.json");
    FAIL() << "a missing file was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/machine.json"), std::string::npos) << e.what();
  }
}

// A fake root with the files detectHost reads.
class FakeRoot {
 public:
  FakeRoot() : root_(fs::temp_directory_path() / ("braid-topology-" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
  }
  ~FakeRoot() { fs::remove_all(root_); }
  void write(const std::string& path, const std::string& text) {
    const fs::path p = root_ / path;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void link(const std::string& path, const std::string& target) {
    const fs::path p = root_ / path;
    fs::create_directories(p.parent_path());
    fs::create_directory_symlink(target, p);
  }
  std::string path() const { return root_.string(); }

 private:
  fs::path root_;
};

// Numbers are checked against their field before conversion: found by tests/fuzz/topology_json_fuzz.cpp, where a
// huge "sms" made nlohmann's cast undefined behaviour and a too-large count wrapped silently.
TEST(Topology, NumbersOutOfTheirFieldsRangeAreRefusedByName) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"gpus": [{"sms": 5.5e123}]})", "\"sms\" must be a whole number"},
      {R"({"gpus": [{"sms": 1.5}]})", "\"sms\" must be a whole number"},
      {R"({"gpus": [{"sms": 4294967296}]})", "\"sms\" is out of range"},
      {R"({"logicalCpus": -4294967296})", "\"logicalCpus\" is out of range"},
      {R"({"memoryBytes": -1})", "\"memoryBytes\" must not be negative"},
      {R"({"cgroupCpus": 1e300})", "\"cgroupCpus\" must be a CPU count"},
      {R"({"gpus": [{"eccUncorrected": 18446744073709551615}]})", "\"eccUncorrected\" is too large"},
  };
  for (const auto& [text, why] : cases) {
    try {
      topologyFromJson(text, "numbers.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << text << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("numbers.json"), std::string::npos) << e.what();
    }
  }
  // What fits is taken: 64-bit sizes, the -1 for an unknown ECC count, a fractional CPU quota.
  const auto t = topologyFromJson(
      R"({"memoryBytes": 18446744073709551615, "cgroupCpus": 2.5, "gpus": [{"eccUncorrected": -1, "sms": 132}]})",
      "fits.json");
  EXPECT_EQ(t.memoryBytes, ~std::uint64_t{0});
  EXPECT_EQ(t.cgroupCpus, 2.5);
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].sms, 132);
  EXPECT_EQ(t.gpus[0].eccUncorrected, -1);
}

TEST(Topology, HostDetectionReadsProcfsAndSysfs) {
  FakeRoot r;
  r.write("proc/sys/kernel/hostname", "node7\n");
  r.write("proc/cpuinfo",
          "processor\t: 0\nmodel name\t: Test CPU 9000\n\nprocessor\t: 1\nmodel name\t: Test CPU 9000\n");
  r.write("proc/meminfo", "MemTotal:       16384000 kB\nMemFree:  1 kB\n");
  r.write("sys/devices/system/cpu/online", "0-3,6\n");
  for (int c : {0, 1, 2, 3, 6}) {
    r.write("sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/physical_package_id", c < 2 ? "0\n" : "1\n");
  }
  r.write("sys/devices/system/node/node0/cpulist", "0-1\n");
  r.write("sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       8192000 kB\n");
  r.write("sys/devices/system/node/node1/cpulist", "2-3,6\n");
  r.write("sys/devices/system/node/node1/meminfo", "Node 1 MemTotal:       8192000 kB\n");
  r.write("sys/fs/cgroup/cpu.max", "150000 100000\n");
  r.write("sys/fs/cgroup/memory.max", "4294967296\n");
  r.write(".dockerenv", "");
  r.write("sys/class/net/lo/operstate", "unknown\n");
  r.write("sys/class/net/lo/type", "772\n");
  r.write("sys/class/net/lo/mtu", "65536\n");
  r.write("sys/class/net/eth1/operstate", "up\n");
  r.write("sys/class/net/eth1/mtu", "9000\n");
  r.write("sys/class/net/eth1/speed", "100000\n");
  r.write("sys/bus/pci/devices/0000:17:00.0/numa_node", "1\n");
  r.write("sys/bus/pci/drivers/mlx5_core/bind", "");
  r.link("sys/class/net/eth1/device", r.path() + "/sys/bus/pci/devices/0000:17:00.0");
  r.link("sys/bus/pci/devices/0000:17:00.0/driver", r.path() + "/sys/bus/pci/drivers/mlx5_core");
  r.write("sys/bus/pci/devices/0000:17:00.0/net/eth1/ifindex", "3\n");
  r.link("sys/class/infiniband/mlx5_0/device", r.path() + "/sys/bus/pci/devices/0000:17:00.0");
  r.write("sys/class/net/eth2/operstate", "down\n");
  r.write("sys/class/net/eth2/mtu", "1500\n");
  r.write("sys/class/net/eth2/speed", "-1\n");
  r.write("sys/module/nvidia_peermem/refcnt", "0\n");

  const topology::Topology t = topology::detect(r.path());
  EXPECT_EQ(t.hostname, "node7");
  EXPECT_EQ(t.cpuModel, "Test CPU 9000");
  EXPECT_EQ(t.logicalCpus, 5);
  EXPECT_EQ(t.usableCpus, 5);  // a fake root asks nothing of this process
  EXPECT_EQ(t.sockets, 2);
  ASSERT_EQ(t.numa.size(), 2u);
  EXPECT_EQ(t.numa[1].cpus, (std::vector<int>{2, 3, 6}));
  EXPECT_EQ(t.numa[0].memoryBytes, 8192000ull * 1024);
  EXPECT_EQ(t.memoryBytes, 16384000ull * 1024);
  EXPECT_DOUBLE_EQ(t.cgroupCpus, 1.5);
  EXPECT_EQ(t.cgroupMemoryBytes, 4294967296ull);
  EXPECT_EQ(t.container, "docker");
  EXPECT_TRUE(t.nvidiaPeermem);
  EXPECT_TRUE(t.gpus.empty());  // a fake root never asks the CUDA runtime
  ASSERT_EQ(t.nics.size(), 3u);
  const topology::Nic* eth1 = t.fastestNic();
  ASSERT_NE(eth1, nullptr);
  EXPECT_EQ(eth1->name, "eth1");
  EXPECT_EQ(eth1->speedMbps, 100000);
  EXPECT_EQ(eth1->mtu, 9000);
  EXPECT_EQ(eth1->driver, "mlx5_core");
  EXPECT_EQ(eth1->pciBusId, "0000:17:00.0");
  EXPECT_EQ(eth1->numaNode, 1);
  EXPECT_EQ(eth1->rdmaDevices, (std::vector<std::string>{"mlx5_0"}));
  for (const topology::Nic& nic : t.nics) {
    if (nic.name == "lo") {
      EXPECT_TRUE(nic.loopback && nic.up);
    }
    if (nic.name == "eth2") {
      EXPECT_TRUE(!nic.up && nic.speedMbps == -1);
    }
  }
}

std::uint64_t inodeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

// A pod's quota sits above its container's cgroup: the tightest level of the process's path counts, in either
// hierarchy. A v1 container mounts only its own cgroup, so the path's deeper levels are not there to read.
TEST(Topology, TheTightestCgroupLimitOnTheProcessPathCounts) {
  {
    FakeRoot r;
    r.write("proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
    r.write("sys/fs/cgroup/kubepods/cpu.max", "max 100000\n");
    r.write("sys/fs/cgroup/kubepods/pod1/cpu.max", "400000 100000\n");
    r.write("sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n");
    r.write("sys/fs/cgroup/kubepods/pod1/memory.max", "2147483648\n");
    r.write("sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "1073741824\n");
    const topology::CgroupLimits l = topology::readCgroupLimits(r.path());
    EXPECT_DOUBLE_EQ(l.cpus, 4);
    EXPECT_EQ(l.cpusGroup, inodeOf(r.path() + "/sys/fs/cgroup/kubepods/pod1"));  // the level whose quota it is
    EXPECT_NE(l.cpusGroup, 0u);
    EXPECT_EQ(l.memoryBytes, 1073741824u);
  }
  {
    FakeRoot r;
    r.write("proc/self/cgroup", "5:memory:/docker/abc\n3:cpuacct,cpu:/docker/abc\n0::/\n");
    r.write("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "250000\n");
    r.write("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
    r.write("sys/fs/cgroup/memory/memory.limit_in_bytes", "536870912\n");
    const topology::CgroupLimits l = topology::readCgroupLimits(r.path());
    EXPECT_DOUBLE_EQ(l.cpus, 2.5);
    EXPECT_EQ(l.memoryBytes, 536870912u);
  }
  {
    FakeRoot r;
    r.write("proc/self/cgroup", "1:cpu:/\n0::/user.slice\n");
    r.write("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");
    r.write("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
    r.write("sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
    const topology::CgroupLimits l = topology::readCgroupLimits(r.path());
    EXPECT_EQ(l.cpus, 0);
    EXPECT_EQ(l.cpusGroup, 0u);
    EXPECT_EQ(l.memoryBytes, 0u);
  }
}

TEST(Topology, TheCpusToKeepBusyAreTheMasksAtMostTheQuotaRoundedUp) {
  EXPECT_EQ(topology::wholeCpus(0), 0);
  EXPECT_EQ(topology::wholeCpus(0.01), 1);
  EXPECT_EQ(topology::wholeCpus(2.0000000001), 2);  // quota / period's float noise
  EXPECT_EQ(topology::wholeCpus(2.5), 3);
  EXPECT_EQ(topology::wholeCpus(1e300), 1000000);
  topology::Topology t;
  t.logicalCpus = 32;
  EXPECT_EQ(t.runnableCpus(), 32);  // no mask read: the online CPUs
  t.usableCpus = 16;
  EXPECT_EQ(t.runnableCpus(), 16);
  t.cgroupCpus = 1.5;
  EXPECT_EQ(t.runnableCpus(), 2);
  t.cgroupCpus = 0.2;
  EXPECT_EQ(t.runnableCpus(), 1);
  t.cgroupCpus = 4;
  EXPECT_EQ(t.runnableCpus(), 4);
  t.cgroupCpus = 64;
  EXPECT_EQ(t.runnableCpus(), 16);
  t.usableCpus = 1;  // a rank bound to one CPU: its mask, not the container's quota
  EXPECT_EQ(t.runnableCpus(), 1);
}

TEST(Topology, HostDetectionOfThisMachineFindsItsCpus) {
  const topology::Topology t = topology::detect();
  EXPECT_GE(t.logicalCpus, 1);
  EXPECT_GE(t.usableCpus, 1);
  EXPECT_LE(t.usableCpus, t.logicalCpus);
  EXPECT_GT(t.memoryBytes, 0u);
  EXPECT_FALSE(detectReport(t).empty());
}

TEST(EnvAdvice, EveryFixtureMatchesItsGoldenScript) {
  for (const char* machine : kMachines) {
    const std::string base = fixtures() + "/" + machine;
    const topology::Topology t = loadTopology(base + ".json");
    EXPECT_EQ(envScript(adviseEnv(t, 0), bindingNotes(t)), slurp(base + ".env.txt"))
        << machine << ": regenerate with `braid env --topology " << base << ".json > " << base << ".env.txt`"
        << " after checking the new output";
  }
}

TEST(EnvAdvice, TheScriptIsOnlyCommentsAndQuotedExports) {
  for (const char* machine : kMachines) {
    const topology::Topology t = loadTopology(fixtures() + "/" + machine + ".json");
    std::istringstream lines(envScript(adviseEnv(t, 0), bindingNotes(t)));
    std::string line;
    while (std::getline(lines, line)) {
      const bool comment = line.rfind("# ", 0) == 0;
      const bool exported = line.rfind("export ", 0) == 0 && line.find("='") != std::string::npos &&
                            line.back() == '\'' && line.find('\'', line.find("='") + 2) == line.size() - 1;
      EXPECT_TRUE(comment || exported) << machine << ": " << line;
    }
  }
}

TEST(EnvAdvice, AnswersFollowTheMachineAndTheRankCount) {
  const auto value = [](const std::vector<EnvAdvice>& advice, const std::string& name) {
    for (const EnvAdvice& a : advice) {
      if (a.name == name) return a.value;
    }
    return std::string("(absent)");
  };
  const auto dgx = loadTopology(fixtures() + "/dgx-h100-nvswitch.json");
  EXPECT_EQ(value(adviseEnv(dgx, 0), "OMP_NUM_THREADS"), "28");  // 224 CPUs over 8 GPUs' ranks
  EXPECT_EQ(value(adviseEnv(dgx, 4), "OMP_NUM_THREADS"), "56");
  EXPECT_EQ(value(adviseEnv(dgx, 0), "NCCL_P2P_DISABLE"), "(absent)");
  EXPECT_EQ(value(adviseEnv(dgx, 0), "BRAID_IFNAME"), "ibp0s0");
  const auto pcie = loadTopology(fixtures() + "/pcie-broken-p2p.json");
  EXPECT_EQ(value(adviseEnv(pcie, 0), "NCCL_P2P_DISABLE"), "1");
  const auto mig = loadTopology(fixtures() + "/a100-mig.json");
  EXPECT_EQ(value(adviseEnv(mig, 2), "OMP_NUM_THREADS"), "8");  // the cgroup's 16 CPUs over 2 ranks
  EXPECT_EQ(value(adviseEnv(mig, 0), "TORCH_CUDA_ARCH_LIST"), "8.0");
  const auto cpu = loadTopology(fixtures() + "/cpu-vm.json");
  EXPECT_EQ(value(adviseEnv(cpu, 0), "TORCH_CUDA_ARCH_LIST"), "(absent)");
  EXPECT_EQ(bindingNotes(dgx).size(), 9u);
  EXPECT_TRUE(bindingNotes(cpu).empty());
}

TEST(Doctor, EveryFixtureMatchesItsGoldenReport) {
  for (const char* machine : kMachines) {
    const std::string base = fixtures() + "/" + machine;
    const topology::Topology t = loadTopology(base + ".json");
    bool failed = false;
    EXPECT_EQ(doctorReport(t.hostname, checkTopology(t), &failed), slurp(base + ".doctor.txt"))
        << machine << ": regenerate with `braid doctor --topology " << base << ".json > " << base << ".doctor.txt`"
        << " after checking the new output";
  }
}

TEST(Doctor, OneGpuIsANoteOnHowItsRanksShareIt) {
  auto t = loadTopology(fixtures() + "/h200x2-nvlink.json");
  const auto sharedGpu = [](const topology::Topology& m) {
    for (const Check& c : checkTopology(m)) {
      if (c.name == "shared-gpu") return std::string(verdictName(c.verdict)) + ": " + c.detail;
    }
    return std::string("(none)");
  };
  EXPECT_EQ(sharedGpu(t), "(none)");  // a GPU per rank
  t.gpus.resize(1);
  t.gpuPairs.clear();
  std::string note = sharedGpu(t);
  EXPECT_EQ(note.rfind("info: ", 0), 0u) << note;
  EXPECT_NE(note.find("shared-GPU path"), std::string::npos) << note;
  t.mpsServer = true;
  note = sharedGpu(t);
  EXPECT_NE(note.find("An MPS server runs"), std::string::npos) << note;
}

TEST(Doctor, VerdictsFollowTheMachine) {
  const auto verdictOf = [](const topology::Topology& t, const std::string& name) {
    for (const Check& c : checkTopology(t)) {
      if (c.name == name) return std::string(verdictName(c.verdict));
    }
    return std::string("(none)");
  };
  auto t = loadTopology(fixtures() + "/h200x2-nvlink.json");
  EXPECT_EQ(verdictOf(t, "cuda"), "ok");
  EXPECT_EQ(verdictOf(t, "p2p"), "ok");
  t.cudaDriverVersion = 12080;  // an older driver than the toolkit braid was built with
  EXPECT_EQ(verdictOf(t, "cuda"), "FAIL");
  t.shmBytes = 64 << 20;  // Docker's default
  EXPECT_EQ(verdictOf(t, "shm"), "warn");
  t.gpuPairs[0].p2p = false;
  EXPECT_EQ(verdictOf(t, "p2p"), "warn");
  bool failed = false;
  doctorReport("x", checkTopology(t), &failed);
  EXPECT_TRUE(failed);
  EXPECT_EQ(verdictOf(loadTopology(fixtures() + "/h200x2-nvlink.json"), "gpu-health"), "ok");
  const auto mig = loadTopology(fixtures() + "/a100-mig.json");
  EXPECT_EQ(verdictOf(mig, "mig"), "warn");
  EXPECT_EQ(verdictOf(mig, "gpu-health"), "FAIL");  // uncorrected ECC errors
  auto pcie = loadTopology(fixtures() + "/pcie-broken-p2p.json");
  EXPECT_EQ(verdictOf(pcie, "network"), "warn");     // 2.5 Gb/s
  EXPECT_EQ(verdictOf(pcie, "gpu-health"), "warn");  // a thermal slowdown, a link on x8
  EXPECT_EQ(verdictOf(pcie, "iommu"), "(none)");     // no peer access to speak of
  for (auto& pair : pcie.gpuPairs) pair.p2p = true;
  EXPECT_EQ(verdictOf(pcie, "iommu"), "warn");  // peer traffic over PCIe through the IOMMU
  auto dgx = loadTopology(fixtures() + "/dgx-h100-nvswitch.json");
  EXPECT_EQ(verdictOf(dgx, "gpudirect-rdma"), "ok");  // dma-buf, without nvidia_peermem
  dgx.gpus[3].dmaBuf = 0;
  EXPECT_EQ(verdictOf(dgx, "gpudirect-rdma"), "warn");
  dgx.nvidiaPeermem = true;
  EXPECT_EQ(verdictOf(dgx, "gpudirect-rdma"), "ok");
  EXPECT_EQ(verdictOf(dgx, "numa"), "info");
  failed = true;
  doctorReport("x", checkTopology(dgx), &failed);
  EXPECT_FALSE(failed);
}

TEST(Doctor, ThisProcessIsChecked) {
  const auto checks = checkProcess(topology::detect());
  ASSERT_FALSE(checks.empty());
  EXPECT_EQ(checks.front().name, "memlock");
}

TEST(Explain, TheSameDecisionsTheCommunicatorMakes) {
  // Every knob's default, whatever this environment sets, then two knobs as a job might set them.
  Settings settings = Settings::fromEnvironment([](const std::string&) { return std::optional<std::string>(); });
  settings.directMaxBytes = 64 * 1024;
  settings.tcpStreams = 2;
  const auto explain = [&](const char* machine, CallShape call) {
    return core::explainCall(loadTopology(fixtures() + "/" + machine + ".json"), call, settings);
  };
  const auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  // GPU buffers, 2 H200s over NVLink: LL up to 512 KiB, one-shot above (the selector's model).
  std::string e = explain("h200x2-nvlink", {"allreduce", 256 << 10, true, 2, 1});
  EXPECT_TRUE(has(e, "cuda_ipc (braid's kernels over NVLink)")) << e;
  EXPECT_TRUE(has(e, "algorithm: ll:")) << e;
  e = explain("h200x2-nvlink", {"allreduce", std::size_t{1} << 30, true, 2, 1});
  EXPECT_TRUE(has(e, "algorithm: oneshot:")) << e;
  // 4 ranks on 2 GPUs share them: the shared-GPU path for every collective that has one, unless an MPS server runs
  // (their kernels then run side by side) or BRAID_CUDA_SHARED_GPU asks for the kernels.
  e = explain("h200x2-nvlink", {"allreduce", 64 << 10, true, 4, 1});
  EXPECT_TRUE(has(e, "several ranks share a GPU")) << e;
  EXPECT_TRUE(has(e, "algorithm: staged:") && has(e, "processes share a GPU")) << e;  // small: the copies cost less
  e = explain("h200x2-nvlink", {"allreduce", 16 << 20, true, 4, 1});
  EXPECT_TRUE(has(e, "algorithm: shared:") && has(e, "ranks share a GPU")) << e;
  EXPECT_TRUE(has(explain("h200x2-nvlink", {"allgather", 64 << 10, true, 4, 1}), "algorithm: shared: each rank"));
  EXPECT_TRUE(has(explain("h200x2-nvlink", {"alltoallv", 64 << 10, true, 4, 1}), "algorithm: staged"));
  // Processes that all share one GPU: the leader path, at every size and for every collective that has one.
  auto one = loadTopology(fixtures() + "/h200x2-nvlink.json");
  one.gpus.resize(1);
  for (std::size_t bytes : {std::size_t{8}, std::size_t{64} << 20}) {
    e = core::explainCall(one, {"allreduce", bytes, true, 2, 1}, settings);
    EXPECT_TRUE(has(e, "algorithm: shared:") && has(e, "ranks share a GPU")) << e;
    EXPECT_TRUE(has(e, "the leader path: rank 0 maps every rank's buffers")) << e;
  }
  EXPECT_TRUE(
      has(core::explainCall(one, {"allgather", 64 << 10, true, 3, 1}, settings), "algorithm: shared: the leader"));
  auto mps = loadTopology(fixtures() + "/h200x2-nvlink.json");
  mps.mpsServer = true;
  e = core::explainCall(mps, {"allreduce", 64 << 10, true, 4, 1}, settings);
  EXPECT_TRUE(has(e, "an MPS server runs")) << e;
  EXPECT_TRUE(has(e, "algorithm: ll:")) << e;
  Settings kernels = settings;
  kernels.cudaSharedGpu = "kernels";
  e = core::explainCall(loadTopology(fixtures() + "/h200x2-nvlink.json"), {"allreduce", 64 << 10, true, 4, 1}, kernels);
  EXPECT_TRUE(has(e, "algorithm: ll:")) << e;
  // 8 GPUs: two-shot for large messages; a PCIe box without P2P everywhere stages.
  EXPECT_TRUE(has(explain("dgx-h100-nvswitch", {"allreduce", std::size_t{1} << 30, true, 8, 1}), "twoshot"));
  e = explain("pcie-broken-p2p", {"allreduce", 8, true, 4, 1});
  EXPECT_TRUE(has(e, "staging through pinned host memory")) << e;
  // Host buffers: shared memory on one host (the selector's cost model for that rank count; two ranks go direct for
  // small messages only), TCP across hosts.
  e = explain("cpu-vm", {"allreduce", 1 << 20, false, 4, 1});
  EXPECT_TRUE(has(e, "algorithm: rsag: cost model")) << e;
  EXPECT_TRUE(has(e, "direct ") && has(e, " us")) << e;  // every candidate's projected cost
  e = explain("cpu-vm", {"allreduce", 1 << 20, false, 2, 1});
  EXPECT_TRUE(has(e, "algorithm: rsag: cost model")) << e;
  e = explain("cpu-vm", {"allreduce", 64, false, 2, 1});
  EXPECT_TRUE(has(e, "algorithm: direct: cost model")) << e;
  e = explain("dgx-h100-nvswitch", {"allreduce", 1 << 20, false, 16, 2});
  EXPECT_TRUE(has(e, "TCP between all ranks over ibp0s0")) << e;
  EXPECT_TRUE(has(e, "ring: measured crossover") && has(e, "for 1048576 B over 16 ranks (tcp)")) << e;
  // From 2 MiB, hosts of several ranks each go hierarchical (core/hierarchy.cpp), as the communicator does.
  e = explain("dgx-h100-nvswitch", {"allreduce", 16 << 20, false, 16, 2});
  EXPECT_TRUE(has(e, "algorithm: hierarchical")) << e;
  EXPECT_TRUE(has(e, "each local rank's 2097152 B shard")) << e;
  settings.hierarchy = "off";
  EXPECT_TRUE(has(explain("dgx-h100-nvswitch", {"allreduce", 16 << 20, false, 16, 2}), "for 16777216 B over 16"));
  settings.hierarchy = "auto";
  EXPECT_TRUE(has(explain("dgx-h100-nvswitch", {"allreduce", 8, false, 16, 2}), "doubling"));
  EXPECT_TRUE(has(explain("dgx-h100-nvswitch", {"allreduce", 8, true, 16, 2}), "staged through pinned host memory"));
  // Bad shapes are refused by name.
  EXPECT_THROW(explain("cpu-vm", {"allscatter", 8, false, 2, 1}), Error);
  EXPECT_THROW(explain("cpu-vm", {"allreduce", 8, false, 1, 2}), Error);
}

TEST(Plan, BytesPerParameterFollowTheZeroAccounting) {
  ModelShape shape;
  shape.params = 7e9;
  shape.layers = 32;
  shape.hidden = 4096;
  const Plan plan = planMemory(shape, 8, 80.0 * (1u << 30));
  ASSERT_EQ(plan.strategies.size(), 4u);
  const Strategy& ddp = plan.strategies[0];
  EXPECT_DOUBLE_EQ(ddp.weights, 2 * 7e9);     // bf16 weights
  EXPECT_DOUBLE_EQ(ddp.grads, 2 * 7e9);       // bf16 gradients
  EXPECT_DOUBLE_EQ(ddp.optimizer, 12 * 7e9);  // fp32 master weights, momentum and variance
  const Strategy& zero3 = plan.strategies[3];
  EXPECT_DOUBLE_EQ(zero3.weights + zero3.grads + zero3.optimizer, 16 * 7e9 / 8);
  EXPECT_DOUBLE_EQ(ddp.activations, 34.0 * 4096 * 4096 * 32);  // 34 s b h per layer
  EXPECT_LT(ddp.activationsCheckpointed, ddp.activations / 10);
  // fp32 with SGD: 4 bytes of weights, 4 of gradients, 4 of momentum.
  shape.dtype = "fp32";
  shape.optimizer = "sgd";
  const Plan sgd = planMemory(shape, 1, 80.0 * (1u << 30));
  EXPECT_DOUBLE_EQ(sgd.strategies[0].weights + sgd.strategies[0].grads + sgd.strategies[0].optimizer, 12 * 7e9);
}

TEST(Plan, TheAnswerAboutActivationCheckpointing) {
  const auto answer = [](double params, int gpus, double gib, int microBatch) {
    ModelShape shape;
    shape.params = params;
    shape.microBatch = microBatch;
    const std::string report = planReport(planMemory(shape, gpus, gib * (1u << 30)), "GPU");
    return report.substr(report.rfind("\n", report.size() - 2) + 1);
  };
  EXPECT_EQ(answer(7e9, 8, 80, 1).rfind("Activation checkpointing: not needed. ZeRO-1", 0), 0u)
      << answer(7e9, 8, 80, 1);
  EXPECT_EQ(answer(7e9, 8, 80, 8).rfind("Activation checkpointing: needed.", 0), 0u) << answer(7e9, 8, 80, 8);
  EXPECT_EQ(answer(70e9, 8, 80, 1).rfind("Nothing fits", 0), 0u) << answer(70e9, 8, 80, 1);
  EXPECT_THROW(planMemory(ModelShape{}, 8, 80.0 * (1u << 30)), Error);  // no parameters
  ModelShape odd;
  odd.params = 1e9;
  odd.dtype = "fp8";
  EXPECT_THROW(planMemory(odd, 8, 80.0 * (1u << 30)), Error);
}

}  // namespace
}  // namespace braid::tools
