#include "support/collective_cases.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "base/data_type.hpp"
#include "base/error.hpp"
#include "base/float8.hpp"
#include "base/half.hpp"
#include "braid/elements.hpp"
#include "support/float8_reference.hpp"
#include "support/reduce_support.hpp"

namespace braid::testing {

namespace {

// The value rank `r` contributes at element `i`: small integers per op so results stay exact.
double inputValue(DataType t, ReduceKind op, int r, std::size_t i) {
  const bool unsignedType = t == DataType::kUint8 || t == DataType::kUint32 || t == DataType::kUint64;
  if (t == DataType::kBool) return static_cast<double>((i * 7 + static_cast<std::size_t>(r) * 3) % 3 != 0);
  switch (op) {
    case ReduceKind::kProd:
      return ((i + static_cast<std::size_t>(r)) % 3 == 0) ? 2 : (i % 5 == 1 && !unsignedType ? -1 : 1);
    case ReduceKind::kMin:
    case ReduceKind::kMax: {
      const double v = static_cast<double>((i * 13 + static_cast<std::size_t>(r) * 7) % 100);
      return unsignedType ? v : v - 50;
    }
    case ReduceKind::kBand:
    case ReduceKind::kBor:
    case ReduceKind::kBxor:
      return static_cast<double>((i * 37 + static_cast<std::size_t>(r) * 11 + 5) % 256 & 0x7f);
    default: {
      const double v = static_cast<double>((i * 7 + static_cast<std::size_t>(r) * 3) % 5);
      return unsignedType ? v : v - 2;
    }
  }
}

double premulScale(int r) { return r + 1; }

// The expected result of an element: `rounded` as one reduction step stores it, from the exact value; float8 checks
// against `exact` and `magnitudes` too (see Expected::accepts).
struct Want {
  double rounded;
  double exact;
  double magnitudes;  // sum of the magnitudes of what was added (premul_sum: the scaled inputs)
};

// Expected op over ranks [0, n) at element i, with premul scales where the op has them.
Want expected(DataType t, ReduceKind op, int n, std::size_t i) {
  if (t == DataType::kBool) {
    const double v = foldBool(n, op, [&](int r) { return inputValue(t, op, r, i) != 0; });
    return {v, v, 0};
  }
  if (op == ReduceKind::kBand || op == ReduceKind::kBor || op == ReduceKind::kBxor) {
    std::int64_t acc = static_cast<std::int64_t>(inputValue(t, op, 0, i));
    for (int r = 1; r < n; ++r) {
      const auto v = static_cast<std::int64_t>(inputValue(t, op, r, i));
      acc = op == ReduceKind::kBand ? (acc & v) : op == ReduceKind::kBor ? (acc | v) : (acc ^ v);
    }
    return {static_cast<double>(acc), static_cast<double>(acc), 0};
  }
  double magnitudes = 0;
  double acc = foldFloat64(
      n, op, [&](int r) { return inputValue(t, op, r, i) * (op == ReduceKind::kPremulSum ? premulScale(r) : 1); },
      &magnitudes);
  if (op == ReduceKind::kAvg && isInteger(t)) acc = std::trunc(acc);
  // Round through the type (integers wrap, halves and float8 round) exactly as a stored result would.
  std::byte tmp[8];
  storeElement(tmp, 0, t, acc);
  return {loadElement(tmp, 0, t), acc, magnitudes};
}

// inputValue is periodic in the element index; the expected result over all ranks is therefore a small table.
std::size_t period(DataType t, ReduceKind op) {
  if (t == DataType::kBool) return 3;
  switch (op) {
    case ReduceKind::kProd:
      return 15;
    case ReduceKind::kMin:
    case ReduceKind::kMax:
      return 100;
    case ReduceKind::kBand:
    case ReduceKind::kBor:
    case ReduceKind::kBxor:
      return 256;
    default:
      return 5;
  }
}

class Expected {
 public:
  Expected(DataType t, ReduceKind op, int n) : type_(t), op_(op), n_(n), table_(period(t, op)) {
    for (std::size_t i = 0; i < table_.size(); ++i) table_[i] = expected(t, op, n, i);
  }
  double operator()(std::size_t i) const { return at(i).rounded; }

  /// Whether `got` may stand for element i: the value rounded once, or within the type's bound where an algorithm
  /// rounds more than once.
  bool accepts(std::size_t i, double got) const {
    const Want& want = at(i);
    if (got == want.rounded) return true;
    const bool sums = op_ == ReduceKind::kSum || op_ == ReduceKind::kAvg || op_ == ReduceKind::kPremulSum;
    if (op_ == ReduceKind::kAvg && (type_ == DataType::kFloat16 || type_ == DataType::kBFloat16)) {
      // Average of float16/bfloat16 divides in float32 then rounds again: allow one unit in the last place.
      const double w = want.rounded;
      const double ulp = std::ldexp(std::fabs(w) > 0 ? std::fabs(w) : 1, type_ == DataType::kFloat16 ? -10 : -7);
      return std::fabs(got - w) <= ulp;
    }
    if (fp8::isFloat8(type_) && sums && n_ > 2) {
      // float8 holds the inputs, not every partial sum of 3 or more ranks (e4m3 past 16, e5m2 past 8; premul_sum's
      // scaled inputs sooner), and an algorithm that stores partial sums (ring, tree, doubling) rounds each: one
      // rounding per rank combined, plus the result's and a premul_sum product's, each at most u (2^-4 for e4m3,
      // 2^-3 for e5m2) of the magnitudes summed. Two ranks round once, a float32 sum that is exact: no slack.
      const double u = type_ == DataType::kFloat8E4M3 ? 0x1p-4 : 0x1p-3;
      return std::fabs(got - want.exact) <= (n_ + 1) * u * want.magnitudes;
    }
    return false;
  }

 private:
  const Want& at(std::size_t i) const { return table_[i % table_.size()]; }
  DataType type_;
  ReduceKind op_;
  int n_;
  std::vector<Want> table_;
};

// Data-movement collectives carry "identity" values: rank r's element i. float8 holds few of the integers up to 120,
// so there the value is that of code v (codes 0..119 are finite in both types): 120 distinct byte patterns.
double movedValue(DataType t, int r, std::size_t i) {
  const std::size_t v = (i * 31 + static_cast<std::size_t>(r) * 17 + 1) % (t == DataType::kBool ? 2 : 120);
  if (t == DataType::kFloat8E4M3) return float8E4M3ToFloat(static_cast<std::uint8_t>(v));
  if (t == DataType::kFloat8E5M2) return float8E5M2ToFloat(static_cast<std::uint8_t>(v));
  return static_cast<double>(v);
}

struct Buffer {
  std::vector<std::byte> bytes;
  Buffer(std::size_t count, DataType t) : bytes(count * dataTypeSize(t) + 1) {
    // Poison: a value no input uses, so unwritten outputs are caught.
    std::memset(bytes.data(), 0x7d, bytes.size());
  }
  void* data() { return bytes.data(); }
};

[[noreturn]] void wrong(const Case& c, int rank, const std::string& where, std::size_t i, double got, double want) {
  throw std::runtime_error(
      strCat(describe(c), " on rank ", rank, ": ", where, "[", i, "] = ", got, ", expected ", want));
}

void checkMoved(const Case& c, int rank, const void* buf, std::size_t offset, int from, std::size_t fromOffset,
                std::size_t count, const char* where) {
  for (std::size_t i = 0; i < count; ++i) {
    const double got = loadElement(buf, offset + i, c.type);
    const double want = movedValue(c.type, from, fromOffset + i);
    if (got != want) wrong(c, rank, where, offset + i, got, want);
  }
}

void fillMoved(void* buf, std::size_t offset, DataType t, int rank, std::size_t fromOffset, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) storeElement(buf, offset + i, t, movedValue(t, rank, fromOffset + i));
}

void wait(Work w) { w.wait(); }

}  // namespace

void require(bool ok, const std::string& message) {
  if (!ok) throw std::runtime_error(message);
}

const std::vector<Coll>& allColls() {
  static const std::vector<Coll> kAll = {
      Coll::kAllreduce,  Coll::kReduce,        Coll::kReduceScatter, Coll::kBroadcast, Coll::kAllgather,
      Coll::kAllgatherv, Coll::kAlltoall,      Coll::kAlltoallv,     Coll::kGather,    Coll::kScatter,
      Coll::kSendRecv,   Coll::kGroupAllPairs, Coll::kBarrier};
  return kAll;
}

const char* collName(Coll c) {
  switch (c) {
    case Coll::kAllreduce:
      return "allreduce";
    case Coll::kReduce:
      return "reduce";
    case Coll::kReduceScatter:
      return "reduce_scatter";
    case Coll::kBroadcast:
      return "broadcast";
    case Coll::kAllgather:
      return "allgather";
    case Coll::kAllgatherv:
      return "allgatherv";
    case Coll::kAlltoall:
      return "alltoall";
    case Coll::kAlltoallv:
      return "alltoallv";
    case Coll::kGather:
      return "gather";
    case Coll::kScatter:
      return "scatter";
    case Coll::kSendRecv:
      return "sendrecv";
    case Coll::kGroupAllPairs:
      return "group_all_pairs";
    case Coll::kBarrier:
      return "barrier";
  }
  return "?";
}

bool reduces(Coll c) { return c == Coll::kAllreduce || c == Coll::kReduce || c == Coll::kReduceScatter; }

bool supportsInPlace(Coll c) {
  return c == Coll::kAllreduce || c == Coll::kReduce || c == Coll::kReduceScatter || c == Coll::kAllgather ||
         c == Coll::kAlltoall || c == Coll::kGather || c == Coll::kScatter || c == Coll::kAllgatherv;
}

std::vector<ReduceKind> opsFor(DataType type) {
  std::vector<ReduceKind> ops;
  for (int k = 0; k < kNumReduceKinds; ++k) {
    const auto kind = static_cast<ReduceKind>(k);
    if (expectReduceSupported(type, kind)) ops.push_back(kind);
  }
  return ops;
}

std::string describe(const Case& c) {
  std::string s = strCat(collName(c.coll), "(", dataTypeName(c.type));
  if (reduces(c.coll)) s += strCat(", ", reduceKindName(c.op));
  s += strCat(", count ", c.count);
  if (c.coll == Coll::kReduce || c.coll == Coll::kBroadcast || c.coll == Coll::kGather || c.coll == Coll::kScatter) {
    s += strCat(", root ", c.root);
  }
  if (c.inPlace) s += ", in place";
  if (c.async) s += ", async";
  return s + ")";
}

void runCase(Communicator& comm, const Case& c) {
  const int n = comm.size(), me = comm.rank();
  const DataType t = c.type;
  const std::size_t esz = dataTypeSize(t);
  const ReduceOp op = c.op == ReduceKind::kPremulSum ? ReduceOp::premulSum(premulScale(me)) : ReduceOp(c.op);
  switch (c.coll) {
    case Coll::kAllreduce:
    case Coll::kReduce: {
      Buffer in(c.count, t), out(c.count, t);
      for (std::size_t i = 0; i < c.count; ++i) storeElement(in.data(), i, t, inputValue(t, c.op, me, i));
      void* recv = c.inPlace ? in.data() : out.data();
      if (c.coll == Coll::kAllreduce) {
        if (c.async) {
          wait(comm.allreduceAsync(in.data(), recv, c.count, t, op));
        } else {
          comm.allreduce(in.data(), recv, c.count, t, op);
        }
      } else {
        if (c.async) {
          wait(comm.reduceAsync(in.data(), recv, c.count, t, op, c.root));
        } else {
          comm.reduce(in.data(), recv, c.count, t, op, c.root);
        }
      }
      if (c.coll == Coll::kReduce && me != c.root) {
        if (!c.inPlace) {
          for (std::size_t i = 0; i < c.count; ++i) {
            if (out.bytes[i * esz] != std::byte{0x7d}) require(false, describe(c) + ": non-root recv written");
          }
        }
        return;
      }
      const Expected want(t, c.op, n);
      for (std::size_t i = 0; i < c.count; ++i) {
        const double got = loadElement(recv, i, t);
        if (!want.accepts(i, got)) wrong(c, me, "recv", i, got, want(i));
      }
      return;
    }
    case Coll::kReduceScatter: {
      const std::size_t total = c.count * n;
      Buffer in(total, t), out(c.count, t);
      // Rank r's input at global index g; block j = [j*count, (j+1)*count).
      for (std::size_t g = 0; g < total; ++g) storeElement(in.data(), g, t, inputValue(t, c.op, me, g));
      void* recv = c.inPlace ? static_cast<std::byte*>(in.data()) + me * c.count * esz : out.data();
      if (c.async) {
        wait(comm.reduceScatterAsync(in.data(), recv, c.count, t, op));
      } else {
        comm.reduceScatter(in.data(), recv, c.count, t, op);
      }
      const Expected want(t, c.op, n);
      for (std::size_t i = 0; i < c.count; ++i) {
        const double got = loadElement(recv, i, t);
        if (!want.accepts(me * c.count + i, got)) wrong(c, me, "recv", i, got, want(me * c.count + i));
      }
      return;
    }
    case Coll::kBroadcast: {
      Buffer buf(c.count, t);
      if (me == c.root) fillMoved(buf.data(), 0, t, c.root, 0, c.count);
      if (c.async) {
        wait(comm.broadcastAsync(buf.data(), c.count, t, c.root));
      } else {
        comm.broadcast(buf.data(), c.count, t, c.root);
      }
      checkMoved(c, me, buf.data(), 0, c.root, 0, c.count, "buffer");
      return;
    }
    case Coll::kAllgather:
    case Coll::kGather: {
      Buffer in(c.count, t), out(c.count * n, t);
      const bool rootOrAll = c.coll == Coll::kAllgather || me == c.root;
      void* send = in.data();
      if (c.inPlace && rootOrAll) send = static_cast<std::byte*>(out.data()) + me * c.count * esz;
      fillMoved(send, 0, t, me, 0, c.count);
      if (c.coll == Coll::kAllgather) {
        if (c.async) {
          wait(comm.allgatherAsync(send, out.data(), c.count, t));
        } else {
          comm.allgather(send, out.data(), c.count, t);
        }
      } else {
        if (c.async) {
          wait(comm.gatherAsync(send, out.data(), c.count, t, c.root));
        } else {
          comm.gather(send, out.data(), c.count, t, c.root);
        }
      }
      if (!rootOrAll) return;
      for (int r = 0; r < n; ++r) checkMoved(c, me, out.data(), r * c.count, r, 0, c.count, "recv");
      return;
    }
    case Coll::kAllgatherv: {
      std::vector<std::size_t> counts(n), displs(n);
      std::size_t total = 0;
      for (int r = 0; r < n; ++r) {
        counts[r] = c.count == 0 ? 0 : c.count + static_cast<std::size_t>(r) * 3 % 5;  // unequal blocks
        displs[r] = total + 1;                                                         // with gaps
        total += counts[r] + 1;
      }
      Buffer in(counts[me], t), out(total, t);
      void* send = c.inPlace ? static_cast<std::byte*>(out.data()) + displs[me] * esz : in.data();
      fillMoved(send, 0, t, me, 0, counts[me]);
      if (c.async) {
        wait(comm.allgathervAsync(send, counts[me], out.data(), counts, displs, t));
      } else {
        comm.allgatherv(send, counts[me], out.data(), counts, displs, t);
      }
      for (int r = 0; r < n; ++r) checkMoved(c, me, out.data(), displs[r], r, 0, counts[r], "recv");
      return;
    }
    case Coll::kScatter: {
      Buffer in(c.count * n, t), out(c.count, t);
      if (me == c.root) {
        for (int r = 0; r < n; ++r) fillMoved(in.data(), r * c.count, t, r, 0, c.count);
      }
      void* recv = (c.inPlace && me == c.root) ? static_cast<std::byte*>(in.data()) + me * c.count * esz : out.data();
      if (c.async) {
        wait(comm.scatterAsync(in.data(), recv, c.count, t, c.root));
      } else {
        comm.scatter(in.data(), recv, c.count, t, c.root);
      }
      checkMoved(c, me, recv, 0, me, 0, c.count, "recv");
      return;
    }
    case Coll::kAlltoall: {
      Buffer in(c.count * n, t), out(c.count * n, t);
      // Block j of rank r's send: movedValue(r, j*count + i); rank me receives block me of each r.
      for (std::size_t g = 0; g < c.count * n; ++g) storeElement(in.data(), g, t, movedValue(t, me, g));
      void* recv = c.inPlace ? in.data() : out.data();
      if (c.async) {
        wait(comm.alltoallAsync(in.data(), recv, c.count, t));
      } else {
        comm.alltoall(in.data(), recv, c.count, t);
      }
      for (int r = 0; r < n; ++r) checkMoved(c, me, recv, r * c.count, r, me * c.count, c.count, "recv");
      return;
    }
    case Coll::kAlltoallv: {
      // Rank r sends (count + r + j) % (count + 2) elements to rank j (0 when count is 0).
      auto amount = [&](int from, int to) -> std::size_t {
        return c.count == 0 ? 0 : (c.count + static_cast<std::size_t>(from + to)) % (c.count + 2);
      };
      std::vector<std::size_t> sc(n), sd(n), rc(n), rd(n);
      std::size_t st = 0, rt = 0;
      for (int j = 0; j < n; ++j) {
        sc[j] = amount(me, j);
        sd[j] = st;
        st += sc[j] + 2;
        rc[j] = amount(j, me);
        rd[j] = rt;
        rt += rc[j] + 1;
      }
      Buffer in(st, t), out(rt, t);
      for (int j = 0; j < n; ++j) fillMoved(in.data(), sd[j], t, me, static_cast<std::size_t>(j) * 1000, sc[j]);
      if (c.async) {
        wait(comm.alltoallvAsync(in.data(), sc, sd, out.data(), rc, rd, t));
      } else {
        comm.alltoallv(in.data(), sc, sd, out.data(), rc, rd, t);
      }
      for (int r = 0; r < n; ++r)
        checkMoved(c, me, out.data(), rd[r], r, static_cast<std::size_t>(me) * 1000, rc[r], "recv");
      return;
    }
    case Coll::kSendRecv: {
      // Ring shift: send to the next rank, receive from the previous; even ranks send first.
      const int next = (me + 1) % n, prev = (me + n - 1) % n;
      Buffer in(c.count, t), out(c.count, t);
      fillMoved(in.data(), 0, t, me, 0, c.count);
      if (n == 1) {
        comm.group({P2pOp{P2pOp::Kind::kSend, me, in.data(), c.count, t, 5},
                    P2pOp{P2pOp::Kind::kRecv, me, out.data(), c.count, t, 5}});
      } else if (me % 2 == 0) {
        comm.send(in.data(), c.count, t, next, 5);
        comm.recv(out.data(), c.count, t, prev, 5);
      } else {
        comm.recv(out.data(), c.count, t, prev, 5);
        comm.send(in.data(), c.count, t, next, 5);
      }
      checkMoved(c, me, out.data(), 0, prev, 0, c.count, "recv");
      return;
    }
    case Coll::kGroupAllPairs: {
      // Every rank sends to and receives from every rank (itself included) in one group; posted in an order
      // that deadlocks without group semantics (all receives first).
      Buffer in(c.count * n, t), out(c.count * n, t);
      for (int j = 0; j < n; ++j) fillMoved(in.data(), j * c.count, t, me, static_cast<std::size_t>(j) * 7, c.count);
      std::vector<P2pOp> ops;
      for (int j = 0; j < n; ++j) {
        ops.push_back(
            P2pOp{P2pOp::Kind::kRecv, j, static_cast<std::byte*>(out.data()) + j * c.count * esz, c.count, t, j});
      }
      for (int j = 0; j < n; ++j) {
        ops.push_back(
            P2pOp{P2pOp::Kind::kSend, j, static_cast<std::byte*>(in.data()) + j * c.count * esz, c.count, t, me});
      }
      if (c.async) {
        wait(comm.groupAsync(ops));
      } else {
        comm.group(ops);
      }
      for (int r = 0; r < n; ++r)
        checkMoved(c, me, out.data(), r * c.count, r, static_cast<std::size_t>(me) * 7, c.count, "recv");
      return;
    }
    case Coll::kBarrier:
      if (c.async) {
        wait(comm.barrierAsync());
      } else {
        comm.barrier();
      }
      return;
  }
}

}  // namespace braid::testing
