#include "bench/bench_sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "bench/timed_loops.hpp"
#include "braid/elements.hpp"
#include "braid/introspect.hpp"
#include "errors.hpp"

namespace braid::tools {

namespace {

// ---- exact inputs and their expected results, in any dtype ----

// Rank r's element i: small integers whose sums, products, min and max are exact in every type.
double inputValue(ReduceKind op, int r, std::size_t i) {
  if (op == ReduceKind::kProd) return 1 + static_cast<double>((i + static_cast<std::size_t>(r)) % 2);
  return static_cast<double>(i % 7 + static_cast<std::size_t>(r));
}

double expectedValue(ReduceKind op, int n, std::size_t i, DataType t) {
  const double base = static_cast<double>(i % 7);
  switch (op) {
    case ReduceKind::kProd: {
      double p = 1;
      for (int r = 0; r < n; ++r) p *= inputValue(op, r, i);
      return p;
    }
    case ReduceKind::kMin:
      return base;
    case ReduceKind::kMax:
      return base + n - 1;
    case ReduceKind::kAvg: {
      const double sum = n * base + n * (n - 1) / 2.0;
      return isInteger(t) ? std::trunc(sum / n) : sum / n;
    }
    default:
      return n * base + n * (n - 1) / 2.0;
  }
}

// One collective call on buffers sized for `bytes` (the nccl-tests size).
using Call = std::function<void()>;

SweepCase plan(Communicator& comm, const std::string& coll, const BenchOptions& o, DataType t, ReduceOp op,
               std::size_t bytes, SweepBuffers& b) {
  const int n = comm.size(), me = comm.rank();
  if (!reducesData(coll)) op = ReduceOp(ReduceKind::kSum);  // moved data uses one input scheme for every -o
  const std::size_t esz = dataTypeSize(t);
  const std::size_t count = bytes / esz;  // elements of the largest buffer
  const std::size_t block = count / static_cast<std::size_t>(n);
  std::byte* send = b.send.data();
  std::byte* recv = o.inplace ? b.send.data() : b.recv.data();
  const int root = o.root;
  auto fillElems = [esz, t, op](std::byte* p, std::size_t elems, int rank, std::size_t first) {
    for (std::size_t i = 0; i < elems; ++i) storeElement(p, i, t, inputValue(op.kind, rank, first + i));
  };
  // Compares `elems` elements at p against `want(i)` rounded through the dtype.
  auto countWrong = [t, esz](const std::byte* p, std::size_t elems, const std::function<double(std::size_t)>& want) {
    long wrong = 0;
    std::byte expect[8];
    for (std::size_t i = 0; i < elems; ++i) {
      storeElement(expect, 0, t, want(i));
      wrong += std::memcmp(expect, p + i * esz, esz) != 0;
    }
    return wrong;
  };
  SweepCase p;
  p.elementBytes = esz;
  auto span = [](std::byte* at, std::size_t elems, std::size_t elemBytes) {
    return std::span<std::byte>(at, elems * elemBytes);
  };
  if (coll == "allreduce" || coll == "reduce") {
    const bool has = coll == "allreduce" || me == root;
    p.fill = [=] { fillElems(send, count, me, 0); };
    p.call = coll == "allreduce" ? Call([=, &comm] { comm.allreduce(send, recv, count, t, op); })
                                 : Call([=, &comm] { comm.reduce(send, recv, count, t, op, root); });
    p.check = [=] {
      if (!has) return 0L;
      return countWrong(recv, count, [=](std::size_t i) { return expectedValue(op.kind, n, i, t); });
    };
    if (has) p.result = span(recv, count, esz);
  } else if (coll == "reducescatter") {
    std::byte* out = o.inplace ? send + static_cast<std::size_t>(me) * block * esz : recv;
    p.fill = [=] { fillElems(send, block * n, me, 0); };
    p.call = [=, &comm] { comm.reduceScatter(send, out, block, t, op); };
    p.check = [=] {
      return countWrong(out, block, [=](std::size_t i) { return expectedValue(op.kind, n, me * block + i, t); });
    };
    p.result = span(out, block, esz);
  } else if (coll == "allgather" || coll == "gather") {
    const bool has = coll == "allgather" || me == root;
    std::byte* out = b.recv.data();
    std::byte* in = o.inplace ? out + static_cast<std::size_t>(me) * block * esz : send;
    p.fill = [=] { fillElems(in, block, me, 0); };
    p.call = coll == "allgather" ? Call([=, &comm] { comm.allgather(in, out, block, t); })
                                 : Call([=, &comm] { comm.gather(in, out, block, t, root); });
    p.check = [=] {
      if (!has) return 0L;
      long wrong = 0;
      for (int r = 0; r < n; ++r) {
        wrong += countWrong(out + static_cast<std::size_t>(r) * block * esz, block,
                            [=](std::size_t i) { return inputValue(ReduceKind::kSum, r, i); });
      }
      return wrong;
    };
    if (has) p.result = span(out, block * static_cast<std::size_t>(n), esz);
  } else if (coll == "broadcast") {
    p.fill = [=] {
      if (me == root) fillElems(send, count, root, 0);
    };
    p.call = [=, &comm] { comm.broadcast(send, count, t, root); };
    p.check = [=] {
      return countWrong(send, count, [=](std::size_t i) { return inputValue(ReduceKind::kSum, root, i); });
    };
    p.result = span(send, count, esz);
  } else if (coll == "scatter") {
    std::byte* out = (o.inplace && me == root) ? send + static_cast<std::size_t>(me) * block * esz : b.recv.data();
    p.fill = [=] {
      if (me != root) return;
      for (int r = 0; r < n; ++r) fillElems(send + static_cast<std::size_t>(r) * block * esz, block, r, 0);
    };
    p.call = [=, &comm] { comm.scatter(send, out, block, t, root); };
    p.check = [=] {
      return countWrong(out, block, [=](std::size_t i) { return inputValue(ReduceKind::kSum, me, i); });
    };
    p.result = span(out, block, esz);
  } else if (coll == "alltoall") {
    p.fill = [=] {
      for (int j = 0; j < n; ++j) fillElems(send + static_cast<std::size_t>(j) * block * esz, block, me, j * block);
    };
    p.call = [=, &comm] { comm.alltoall(send, recv, block, t); };
    p.check = [=] {
      long wrong = 0;
      for (int r = 0; r < n; ++r) {
        wrong += countWrong(recv + static_cast<std::size_t>(r) * block * esz, block,
                            [=](std::size_t i) { return inputValue(ReduceKind::kSum, r, me * block + i); });
      }
      return wrong;
    };
    p.result = span(recv, block * static_cast<std::size_t>(n), esz);
  } else if (coll == "sendrecv") {
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    std::byte* out = b.recv.data();
    p.fill = [=] { fillElems(send, count, me, 0); };
    p.call = [=, &comm] {
      comm.group(
          {P2pOp{P2pOp::Kind::kSend, next, send, count, t, 0}, P2pOp{P2pOp::Kind::kRecv, prev, out, count, t, 0}});
    };
    p.check = [=] {
      return countWrong(out, count, [=](std::size_t i) { return inputValue(ReduceKind::kSum, prev, i); });
    };
    p.result = span(out, count, esz);
  } else {
    throw std::invalid_argument("unknown collective '" + coll + "'");
  }
  return p;
}

// The rank whose result corruptOne alters: one that has a result for every collective.
int corruptedRank(const std::string& coll, const BenchOptions& o) { return hasRoot(coll) ? o.root : 0; }

// Any change of bytes is a wrong element to the checker (it compares bytes): flip the lowest bit of the middle
// element's first byte.
void corruptOneElement(const SweepCase& c) {
  if (c.result.empty() || c.elementBytes == 0) return;
  const std::size_t elems = c.result.size() / c.elementBytes;
  c.result[elems / 2 * c.elementBytes] ^= std::byte{0x01};
}

struct TypeAndOp {
  DataType type;
  ReduceKind kind;
};

TypeAndOp typeAndOp(const BenchOptions& o) {
  const auto type = parseDataType(o.dtype);
  if (!type) throw std::invalid_argument("unknown data type '" + o.dtype + "'");
  const auto kind = parseReduceKind(o.op);
  if (!kind) throw std::invalid_argument("unknown reduce op '" + o.op + "'");
  return {*type, *kind};
}

// The tag of the messages that carry wrong counts when there is no store; the sweep's own sendrecv uses tag 0.
constexpr int kWrongCountTag = 0x77726e67;  // "wrng"

}  // namespace

SweepCase sweepCase(Communicator& comm, const std::string& collective, const BenchOptions& options, std::size_t bytes,
                    SweepBuffers& buffers) {
  const TypeAndOp to = typeAndOp(options);
  if (buffers.send.size() < bytes || buffers.recv.size() < bytes) {
    throw std::invalid_argument("sweep buffers of " + std::to_string(buffers.send.size()) + " bytes for a size of " +
                                std::to_string(bytes));
  }
  return plan(comm, collective, options, to.type, ReduceOp(to.kind), bytes, buffers);
}

long sumWrongCounts(Communicator& comm, const std::string& collective, long mine) {
  const int n = comm.size(), me = comm.rank();
  if (n == 1) return mine;
  // One key per checked call: the sequence number is the same on every rank here and never repeats on this
  // communicator.
  if (const auto total = sumThroughStore(comm, strCat("bench-wrong/", comm.sequenceNumber()), mine)) {
    return static_cast<long>(*total);
  }
  std::int64_t total = mine;
  if (collective == "sendrecv") {
    comm.allreduce(&total, &total, 1, DataType::kInt64, ReduceKind::kSum);
    return static_cast<long>(total);
  }
  if (me == 0) {
    for (int r = 1; r < n; ++r) {
      std::int64_t theirs = 0;
      comm.recv(&theirs, 1, DataType::kInt64, r, kWrongCountTag);
      total += theirs;
    }
    for (int r = 1; r < n; ++r) comm.send(&total, 1, DataType::kInt64, r, kWrongCountTag);
  } else {
    comm.send(&total, 1, DataType::kInt64, 0, kWrongCountTag);
    comm.recv(&total, 1, DataType::kInt64, 0, kWrongCountTag);
  }
  return static_cast<long>(total);
}

std::vector<BenchRow> runSweep(Communicator& comm, const std::string& coll, const BenchOptions& o,
                               const std::function<void(const BenchRow&, const std::string&)>& onRow,
                               const std::function<void(std::size_t, std::size_t, std::size_t)>& onSize) {
  const TypeAndOp to = typeAndOp(o);
  const ReduceOp op(to.kind);
  const int n = comm.size();
  const std::size_t esz = dataTypeSize(to.type);
  // nccl-tests sizes count whole elements per rank for the block collectives.
  const bool blocks =
      coll == "allgather" || coll == "gather" || coll == "reducescatter" || coll == "scatter" || coll == "alltoall";
  const std::size_t unit = blocks ? esz * static_cast<std::size_t>(n) : esz;
  const std::vector<std::size_t> sizes = sweepSizes(o, unit);
  SweepBuffers b;
  // Allocated and touched once, so no size pays first-touch page faults in its timed loops.
  const std::size_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  b.send.assign(largest + 64, std::byte{0});
  b.recv.assign(largest + 64, std::byte{0});
  std::vector<BenchRow> rows;
  for (std::size_t index = 0; index < sizes.size(); ++index) {
    const std::size_t bytes = sizes[index];
    if (onSize) onSize(bytes, index, sizes.size());
    SweepCase p = plan(comm, coll, o, to.type, op, bytes, b);
    p.fill();
    const LoopTiming timing = timeLoops(
        o, p.call, [&] { comm.barrier(); },
        [&](double seconds) {
          comm.allreduce(&seconds, &seconds, 1, DataType::kFloat64, ReduceKind::kMax);
          return seconds;
        });
    BenchRow row;
    row.impl = "braid";
    row.collective = coll;
    row.dtype = dataTypeName(to.type);
    row.redop = reducesData(coll) ? reduceKindName(to.kind) : "";
    row.bytes = bytes;
    row.count = bytes / esz;
    row.ranks = n;
    row.root = hasRoot(coll) ? o.root : -1;
    row.mem = o.mem;
    row.timeUs = timing.secondsPerCall * 1e6;
    row.iterations = timing.iterations;
    row.voluntarySwitchesPerCall = timing.voluntarySwitchesPerCall;
    row.involuntarySwitchesPerCall = timing.involuntarySwitchesPerCall;
    row.algbwGBs = row.timeUs > 0 ? static_cast<double>(bytes) / row.timeUs / 1e3 : 0;
    row.busbwGBs = row.algbwGBs * busFactor(coll, n);
    row.wrong = -1;
    if (o.check) {
      p.fill();  // fresh inputs: in-place timed loops overwrote them
      p.call();
      if (o.corruptOne && comm.rank() == corruptedRank(coll, o)) corruptOneElement(p);
      row.wrong = sumWrongCounts(comm, coll, p.check());
    }
    row.algorithm = comm.transportName();
    if (coll == "allreduce" || coll == "reduce") row.algorithm = comm.allreduceAlgorithm(bytes);
    if (onRow) onRow(row, row.algorithm);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace braid::tools
