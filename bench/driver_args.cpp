#include "bench/driver_args.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace braid::bench {

namespace {

using tools::BenchOptions;
using tools::BenchRow;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// nccl-tests' and braid's spellings, so that `braid bench -d half` reaches a driver as it was typed.
std::string canonicalDtype(const std::string& name) {
  const std::string n = lower(name);
  if (n == "float" || n == "fp32") return "float32";
  if (n == "double" || n == "fp64") return "float64";
  if (n == "half" || n == "fp16") return "float16";
  if (n == "int") return "int32";
  if (n == "bf16") return "bfloat16";
  return n;
}

std::string canonicalOp(const std::string& name) {
  const std::string n = lower(name);
  return n == "product" ? "prod" : n;
}

long intValue(const std::string& flag, const std::string& text, long min) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < min) {
    throw std::invalid_argument(flag + " '" + text + "': expected an integer >= " + std::to_string(min));
  }
  return v;
}

std::size_t bytesValue(const std::string& flag, const std::string& text) {
  const auto v = parseByteSize(text);
  if (!v || *v == 0) throw std::invalid_argument(flag + " '" + text + "' is not a size (e.g. 8, 64K, 16M, 1G)");
  return *v;
}

bool knownCollective(const std::string& c) {
  const auto& all = tools::benchCollectives();
  return std::find(all.begin(), all.end(), c) != all.end();
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::optional<std::size_t> parseByteSize(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return std::nullopt;
  std::string suffix = lower(end);
  if (!suffix.empty() && suffix.back() == 'b') suffix.pop_back();
  if (suffix.size() == 2 && suffix[1] == 'i') suffix.pop_back();  // KiB, MiB, GiB
  unsigned shift = 0;
  if (suffix == "k") {
    shift = 10;
  } else if (suffix == "m") {
    shift = 20;
  } else if (suffix == "g") {
    shift = 30;
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  if (shift != 0 && v > (~0ull >> shift)) return std::nullopt;
  return static_cast<std::size_t>(v << shift);
}

std::string driverUsage(const std::string& program) {
  return "usage: " + program +
         " [--collective NAME] [-b BYTES] [-e BYTES] [-f N] [-n N] [-w N] [-c 0|1] [-o OP] [-d DTYPE] [-r ROOT]\n"
         "       [--inplace] [--reps N] [--min-loop-ms MS] [--json PATH]\n"
         "One rank of braid bench's method through a peer library; `braid bench --compare` starts it.\n"
         "  --collective  allreduce (default), allgather, reducescatter, broadcast, reduce, alltoall, gather,\n"
         "                scatter, sendrecv\n"
         "  -b, -e        smallest and largest size in bytes (K/M/G suffixes; default 8 and 64M)\n"
         "  -f            each size is the previous times this (default 2)\n"
         "  -n, -w        calls per timed loop (20), warm-up calls per size (5)\n"
         "  --reps        timed loops per size, the median counts (3)\n"
         "  --min-loop-ms more calls than -n where a loop would take less (0: always -n)\n"
         "  -c            check results exactly (1) or not (0)\n"
         "  -o, -d, -r    reduce op (sum, prod, min, max), dtype (float32, float64, int32, float16), root rank\n"
         "  --inplace     in-place operation\n"
         "  --json        where rank 0 writes its rows\n";
}

DriverArgs parseDriverArgs(int argc, char** argv) {
  DriverArgs a;
  BenchOptions& o = a.options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      a.help = true;
      continue;
    }
    if (flag == "--inplace") {
      o.inplace = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value (or is not a flag; see --help)");
    const std::string value = argv[++i];
    if (flag == "--collective") {
      o.collective = lower(value);
    } else if (flag == "-b") {
      o.minBytes = bytesValue(flag, value);
    } else if (flag == "-e") {
      o.maxBytes = bytesValue(flag, value);
    } else if (flag == "-f") {
      o.factor = static_cast<std::size_t>(intValue(flag, value, 2));
    } else if (flag == "-n") {
      o.iterations = static_cast<int>(intValue(flag, value, 1));
    } else if (flag == "-w") {
      o.warmup = static_cast<int>(intValue(flag, value, 0));
    } else if (flag == "-c") {
      o.check = intValue(flag, value, 0) != 0;
    } else if (flag == "-o") {
      o.op = canonicalOp(value);
    } else if (flag == "-d") {
      o.dtype = canonicalDtype(value);
    } else if (flag == "-r") {
      o.root = static_cast<int>(intValue(flag, value, 0));
    } else if (flag == "--reps") {
      o.repetitions = static_cast<int>(intValue(flag, value, 1));
    } else if (flag == "--min-loop-ms") {
      o.minLoopMs = static_cast<int>(intValue(flag, value, 0));
    } else if (flag == "--json") {
      a.jsonPath = value;
    } else {
      throw std::invalid_argument("unknown flag '" + flag + "' (see --help)");
    }
  }
  if (o.minBytes > o.maxBytes) {
    throw std::invalid_argument("-b " + std::to_string(o.minBytes) + " is larger than -e " +
                                std::to_string(o.maxBytes));
  }
  return a;
}

std::size_t dtypeBytes(const std::string& dtype) {
  if (dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "float64") return 8;
  if (dtype == "float16" || dtype == "bfloat16") return 2;
  return 0;
}

void requireSupported(const std::string& peer, const BenchOptions& o, int ranks,
                      const std::vector<std::string>& dtypes) {
  if (!knownCollective(o.collective)) {
    throw std::invalid_argument(peer + ": unknown collective '" + o.collective + "'");
  }
  if (std::find(dtypes.begin(), dtypes.end(), o.dtype) == dtypes.end()) {
    throw std::invalid_argument(peer + " cannot run dtype " + o.dtype + " (it runs " + joined(dtypes) + ")");
  }
  if (tools::reducesData(o.collective) && o.op != "sum" && o.op != "prod" && o.op != "min" && o.op != "max") {
    throw std::invalid_argument(peer + " has no reduce op " + o.op + " (it has sum, prod, min, max)");
  }
  if (tools::hasRoot(o.collective) && (o.root < 0 || o.root >= ranks)) {
    throw std::invalid_argument(peer + ": root " + std::to_string(o.root) + " is not a rank of " +
                                std::to_string(ranks));
  }
}

bool overBlocks(const std::string& c) {
  return c == "allgather" || c == "gather" || c == "reducescatter" || c == "scatter" || c == "alltoall";
}

std::vector<std::size_t> driverSizes(const BenchOptions& o, int ranks) {
  const std::size_t esz = dtypeBytes(o.dtype);
  std::vector<std::size_t> sizes =
      tools::sweepSizes(o, overBlocks(o.collective) ? esz * static_cast<std::size_t>(ranks) : esz);
  // A size below one element per rank rounds to 0 bytes: it measures nothing, and Gloo's allgather divides by it.
  std::erase(sizes, std::size_t{0});
  return sizes;
}

double reduceInput(const std::string& op, int rank, std::size_t index) {
  // prod: ones and twos, so that the product is a power of two, exact while it fits the dtype.
  if (op == "prod") return 1 + static_cast<double>((index + static_cast<std::size_t>(rank)) % 2);
  return static_cast<double>(index % 7 + static_cast<std::size_t>(rank));
}

double reduceExpected(const std::string& op, int ranks, std::size_t index) {
  const double base = static_cast<double>(index % 7);
  if (op == "prod") {
    double p = 1;
    for (int r = 0; r < ranks; ++r) p *= reduceInput(op, r, index);
    return p;
  }
  if (op == "min") return base;
  if (op == "max") return base + ranks - 1;
  return ranks * base + ranks * (ranks - 1) / 2.0;
}

double moveInput(int rank, std::size_t index) {
  return static_cast<double>(index % 7 + static_cast<std::size_t>(rank));
}

BenchRow makeRow(const std::string& impl, const BenchOptions& o, int ranks, std::size_t bytes,
                 const tools::LoopTiming& timing, long wrong) {
  const double seconds = timing.secondsPerCall;
  BenchRow row;
  row.impl = impl;
  row.collective = o.collective;
  row.dtype = o.dtype;
  row.redop = tools::reducesData(o.collective) ? o.op : "";
  row.bytes = bytes;
  row.count = bytes / dtypeBytes(o.dtype);
  row.ranks = ranks;
  row.root = tools::hasRoot(o.collective) ? o.root : -1;
  row.mem = "host";
  row.timeUs = seconds * 1e6;
  row.algbwGBs = seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
  row.busbwGBs = row.algbwGBs * tools::busFactor(o.collective, ranks);
  row.wrong = wrong;
  row.iterations = timing.iterations;
  row.voluntarySwitchesPerCall = timing.voluntarySwitchesPerCall;
  row.involuntarySwitchesPerCall = timing.involuntarySwitchesPerCall;
  return row;
}

void printHeader(const std::string& program, const BenchOptions& o, int ranks) {
  std::printf("# %s: %s %s%s%s, %d ranks, %s, -n %d -w %d --min-loop-ms %d, median of %d loops\n", program.c_str(),
              o.collective.c_str(), o.dtype.c_str(), tools::reducesData(o.collective) ? " " : "",
              tools::reducesData(o.collective) ? o.op.c_str() : "", ranks, o.inplace ? "in place" : "out of place",
              o.iterations, o.warmup, o.minLoopMs, std::max(o.repetitions, 1));
  std::printf("# %12s %12s %12s %12s %12s %8s\n", "bytes", "count", "time_us", "algbw_GB/s", "busbw_GB/s", "wrong");
  std::fflush(stdout);
}

void printRow(const BenchRow& r) {
  std::printf("  %12zu %12zu %12.2f %12.3f %12.3f %8s\n", r.bytes, r.count, r.timeUs, r.algbwGBs, r.busbwGBs,
              r.wrong < 0 ? "-" : std::to_string(r.wrong).c_str());
  std::fflush(stdout);
}

}  // namespace braid::bench
