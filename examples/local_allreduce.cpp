// braid's main job until `braid bench` lands: starts N local ranks as processes over shared memory, runs a
// verified allreduce sweep (8 B .. 64 MiB of float32 by default) and prints an nccl-tests-style table.
//
//   local_allreduce [-n RANKS] [-e MAX_BYTES] [-i ITERS]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "braid/braid.hpp"

namespace {

struct Options {
  int ranks = 4;
  std::size_t maxBytes = 64u << 20;
  int iterations = 20;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "-n")
      o.ranks = std::atoi(argv[i + 1]);
    else if (flag == "-e")
      o.maxBytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "-i")
      o.iterations = std::atoi(argv[i + 1]);
  }
  if (o.ranks < 1 || o.iterations < 1) {
    std::fprintf(stderr, "usage: local_allreduce [-n RANKS>=1] [-e MAX_BYTES] [-i ITERS>=1]\n");
    std::exit(2);
  }
  return o;
}

// Exact-sum inputs: rank r contributes (i % 7) + r, so the sum over n ranks is n*(i%7) + n(n-1)/2, exact in float.
int runRank(braid::Communicator& comm, const Options& o) {
  const int n = comm.size(), me = comm.rank();
  if (me == 0) {
    std::printf("# braid allreduce, %d ranks over shared memory, float32 sum, %d iterations per size\n", n,
                o.iterations);
    std::printf("%12s %12s %10s %10s %10s %7s\n", "size(B)", "count", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
                "#wrong");
  }
  int failures = 0;
  for (std::size_t bytes = 8; bytes <= o.maxBytes; bytes *= 4) {
    const std::size_t count = bytes / sizeof(float);
    std::vector<float> in(count), out(count);
    for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<float>(i % 7 + me);
    comm.allreduce(in.data(), out.data(), count, braid::DataType::kFloat32, braid::ReduceKind::kSum);  // warm-up
    std::vector<double> times;
    for (int rep = 0; rep < 3; ++rep) {
      comm.barrier();
      const auto start = std::chrono::steady_clock::now();
      for (int it = 0; it < o.iterations; ++it) {
        comm.allreduce(in.data(), out.data(), count, braid::DataType::kFloat32, braid::ReduceKind::kSum);
      }
      times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                      o.iterations);
    }
    std::sort(times.begin(), times.end());
    double us = times[1];  // median of three
    comm.allreduce(&us, &us, 1, braid::DataType::kFloat64, braid::ReduceKind::kMax);
    long wrong = 0;
    for (std::size_t i = 0; i < count; ++i) {
      wrong += out[i] != static_cast<float>(n * (i % 7) + n * (n - 1) / 2);
    }
    comm.allreduce(&wrong, &wrong, 1, braid::DataType::kInt64, braid::ReduceKind::kSum);
    failures += wrong != 0;
    if (me == 0) {
      const double algbw = static_cast<double>(bytes) / us / 1e3;
      std::printf("%12zu %12zu %10.2f %10.2f %10.2f %7ld\n", bytes, count, us, algbw, algbw * 2.0 * (n - 1) / n, wrong);
    }
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const braid::UniqueId id = braid::Communicator::uniqueId();
  std::vector<pid_t> pids;
  for (int r = 0; r < o.ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      int status = 1;
      try {
        auto comm = braid::Communicator::create(id, r, o.ranks);
        status = runRank(*comm, o) == 0 ? 0 : 3;
      } catch (const braid::Error& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      }
      std::fflush(stdout);
      _exit(status);
    }
    pids.push_back(pid);
  }
  int result = 0;
  for (int r = 0; r < o.ranks; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "rank %d failed (%s %d)\n", r, WIFEXITED(status) ? "exit status" : "signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      result = 1;
    }
  }
  std::printf(result == 0 ? "# all results verified\n" : "# FAILED\n");
  return result;
}
