// braid-bench-reduce-cpu: the CPU reduction kernels' throughput (algorithms/host/reduce_cpu.hpp) under every kernel
// set this CPU has, for float32, float16 and bfloat16 sums of 2 and 8 sources. Timings only: the kernels' results
// are checked by the ReduceCpu unit tests; here a wrong sum only stops the run, so that no figure comes from a
// broken kernel.
//
// Usage: braid-bench-reduce-cpu [MiB per source, default 4] [repetitions, default 6; the first is a warm-up]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "algorithms/host/reduce_cpu.hpp"
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "braid/elements.hpp"

namespace {

using braid::DataType;

// The kernel sets this CPU runs: a cap above what it has falls back, so only those whose name comes back count.
std::vector<std::string> isaLevels() {
  std::vector<std::string> levels;
  for (const char* name : {"generic", "avx2", "avx512"}) {
    braid::host::setReduceIsaCap(name);
    if (std::string(braid::host::reduceIsaName()) == name) levels.push_back(name);
  }
  braid::host::setReduceIsaCap("auto");
  return levels;
}

int run(std::size_t bytes, int reps) {
  constexpr int kSources = 8;
  const auto levels = isaLevels();
  std::printf("kernel sets on this CPU:");
  for (const auto& l : levels) std::printf(" %s", l.c_str());
  std::printf("\n");
  for (DataType type : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    const std::size_t count = bytes / braid::dataTypeSize(type);
    std::vector<std::vector<std::byte>> srcs(kSources, std::vector<std::byte>(bytes));
    std::vector<const void*> ptrs;
    for (int s = 0; s < kSources; ++s) {
      for (std::size_t i = 0; i < count; ++i) {
        braid::storeElement(srcs[s].data(), i, type, static_cast<double>((i + s) % 7));  // sums stay exact
      }
      ptrs.push_back(srcs[s].data());
    }
    std::vector<std::byte> out(bytes);
    for (const auto& isa : levels) {
      braid::host::setReduceIsaCap(isa);
      for (int nsrcs : {2, kSources}) {
        double best = 1e9;
        for (int rep = 0; rep < reps; ++rep) {
          const auto t0 = std::chrono::steady_clock::now();
          braid::host::reduceSources(out.data(), ptrs.data(), nsrcs, count, type, braid::ReduceKind::kSum);
          const auto t1 = std::chrono::steady_clock::now();
          if (rep > 0 || reps == 1) best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
        }
        for (std::size_t i : {std::size_t{0}, count / 2, count - 1}) {
          double want = 0;
          for (int s = 0; s < nsrcs; ++s) want += static_cast<double>((i + s) % 7);
          if (braid::loadElement(out.data(), i, type) != want) {
            std::fprintf(stderr, "%s %s sum of %d: element %zu is %g, not %g\n", braid::dataTypeName(type), isa.c_str(),
                         nsrcs, i, braid::loadElement(out.data(), i, type), want);
            return 1;
          }
        }
        const double readGBs = static_cast<double>(nsrcs) * static_cast<double>(bytes) / best / 1e9;
        std::printf("%-8s %-7s sum %d x %zu MiB: %8.3f ms, %6.1f GB/s read (%6.1f GB/s read+write)\n",
                    braid::dataTypeName(type), isa.c_str(), nsrcs, bytes >> 20, best * 1e3, readGBs,
                    readGBs * (nsrcs + 1) / nsrcs);
      }
    }
  }
  braid::host::setReduceIsaCap("auto");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const long mib = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 4;
  const long reps = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 6;
  if (argc > 3 || mib < 1 || mib > 4096 || reps < 1 || reps > 1000) {
    std::fprintf(stderr, "usage: %s [MiB per source, 1-4096] [repetitions, 1-1000]\n", argv[0]);
    return 2;
  }
  try {
    return run(static_cast<std::size_t>(mib) << 20, static_cast<int>(reps));
  } catch (const braid::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
