#include "bench/device_calls.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "braid/elements.hpp"

namespace braid::bench {

namespace {

braid::DataType braidType(const std::string& dtype) {
  if (dtype == "float32") return braid::DataType::kFloat32;
  if (dtype == "bfloat16") return braid::DataType::kBFloat16;
  if (dtype == "float16") return braid::DataType::kFloat16;
  if (dtype == "float64") return braid::DataType::kFloat64;
  return braid::DataType::kInt32;
}
braid::ReduceOp braidOp(const std::string& op) {
  if (op == "prod") return braid::ReduceKind::kProd;
  if (op == "min") return braid::ReduceKind::kMin;
  if (op == "max") return braid::ReduceKind::kMax;
  return braid::ReduceKind::kSum;
}

// Host images of the inputs and results as raw element bits (2, 4 or 8 bytes).
std::vector<std::byte> encode(const std::string& dtype, const std::vector<double>& values) {
  const braid::DataType type = braidType(dtype);
  std::vector<std::byte> out(values.size() * braid::dataTypeSize(type));
  for (std::size_t i = 0; i < values.size(); ++i) braid::storeElement(out.data(), i, type, values[i]);
  return out;
}

}  // namespace

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

void fill(const Setup& s, cudaStream_t stream) {
  std::vector<double> sendV(s.count, 0), recvV(s.count, 0);
  braid::bench::fillSize(s.o, s.n, s.me, s.count, sendV.data(), recvV.data(), [](double v) { return v; });
  const auto a = encode(s.o.dtype, sendV), b = encode(s.o.dtype, recvV);
  check(cudaMemcpyAsync(s.send, a.data(), a.size(), cudaMemcpyHostToDevice, stream), "fill send");
  check(cudaMemcpyAsync(s.recv, b.data(), b.size(), cudaMemcpyHostToDevice, stream), "fill recv");
  check(cudaStreamSynchronize(stream), "fill");
}

long wrongElements(const Setup& s, cudaStream_t stream) {
  const std::size_t esz = braid::bench::dtypeBytes(s.o.dtype);
  std::vector<std::byte> got(s.count * esz);
  check(cudaMemcpyAsync(got.data(), s.recv, got.size(), cudaMemcpyDeviceToHost, stream), "result");
  check(cudaStreamSynchronize(stream), "result");
  // countWrong compares T-typed elements: run it on the encoded bits through a per-size element type.
  long wrong = 0;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> out(s.count);
    std::memcpy(out.data(), got.data(), got.size());
    wrong = braid::bench::countWrong(s.o, s.n, s.me, s.count, out.data(), [&](double v) {
      T t{};
      const auto bytes = encode(s.o.dtype, {v});
      std::memcpy(&t, bytes.data(), sizeof(T));
      return t;
    });
  };
  if (esz == 2)
    run(std::uint16_t{});
  else if (esz == 4)
    run(std::uint32_t{});
  else
    run(std::uint64_t{});
  return wrong;
}

namespace {

// Where each collective reads and writes in one size's buffers, the same for both libraries: in place, everything
// is in recv (the driver scheme's convention), a reduce-scatter's output and an allgather's input at this rank's
// block of it.
struct Places {
  std::size_t block = 0;  // elements per rank of the collectives over blocks (overBlocks), else the count
  std::byte* in = nullptr;
  std::byte* out = nullptr;
  std::byte* scatteredOut = nullptr;  // reduce-scatter's output
  std::byte* gatheredIn = nullptr;    // allgather's input
};

Places placesOf(const Setup& s) {
  Places p;
  p.block = braid::bench::overBlocks(s.o.collective) ? s.count / static_cast<std::size_t>(s.n) : s.count;
  std::byte* mine = s.recv + static_cast<std::size_t>(s.me) * p.block * braid::bench::dtypeBytes(s.o.dtype);
  p.in = s.o.inplace ? s.recv : s.send;
  p.out = s.recv;
  p.scatteredOut = s.o.inplace ? mine : s.recv;
  p.gatheredIn = s.o.inplace ? mine : s.send;
  return p;
}

}  // namespace

Call braidCall(Communicator& c, const Setup& s) {
  const std::string& coll = s.o.collective;
  const auto t = braidType(s.o.dtype);
  const auto op = braidOp(s.o.op);
  const Places p = placesOf(s);
  const int root = s.o.root;
  if (coll == "allreduce")
    return [=, &c](cudaStream_t st) { c.allreduce(p.in, p.out, s.count, t, op, {.stream = st}); };
  if (coll == "reduce") {
    return [=, &c](cudaStream_t st) { c.reduce(p.in, p.out, s.count, t, op, root, {.stream = st}); };
  }
  if (coll == "reducescatter") {
    return [=, &c](cudaStream_t st) { c.reduceScatter(p.in, p.scatteredOut, p.block, t, op, {.stream = st}); };
  }
  if (coll == "allgather") {
    return [=, &c](cudaStream_t st) { c.allgather(p.gatheredIn, p.out, p.block, t, {.stream = st}); };
  }
  if (coll == "broadcast") return [=, &c](cudaStream_t st) { c.broadcast(p.out, s.count, t, root, {.stream = st}); };
  if (coll == "alltoall") return [=, &c](cudaStream_t st) { c.alltoall(p.in, p.out, p.block, t, {.stream = st}); };
  throw std::invalid_argument("braid-bench-device: no device sweep of " + coll);
}

Call memcpyCall(const Setup& s) {
  return [&s](cudaStream_t stream) {
    if (s.me != 0) return;
    check(cudaMemcpyAsync(s.recv, s.send, s.count * braid::bench::dtypeBytes(s.o.dtype), cudaMemcpyDeviceToDevice,
                          stream),
          "cudaMemcpyAsync(reference copy)");
  };
}

Call ncclCall(const Nccl& nc, ncclComm_t comm, const Setup& s) {
  const std::string& coll = s.o.collective;
  const auto t = ncclType(s.o.dtype);
  const auto op = ncclOp(s.o.op);
  const std::size_t n = static_cast<std::size_t>(s.n);
  const std::size_t esz = braid::bench::dtypeBytes(s.o.dtype);
  const Places b = placesOf(s);
  const int root = s.o.root;
  const Nccl* p = &nc;
  auto ok = [p](ncclResult_t r) { checkNccl(*p, r, "nccl call"); };
  if (coll == "allreduce") return [=](cudaStream_t st) { ok(p->allReduce(b.in, b.out, s.count, t, op, comm, st)); };
  if (coll == "reduce") return [=](cudaStream_t st) { ok(p->reduce(b.in, b.out, s.count, t, op, root, comm, st)); };
  if (coll == "reducescatter") {
    return [=](cudaStream_t st) { ok(p->reduceScatter(b.in, b.scatteredOut, b.block, t, op, comm, st)); };
  }
  if (coll == "allgather") {
    return [=](cudaStream_t st) { ok(p->allGather(b.gatheredIn, b.out, b.block, t, comm, st)); };
  }
  if (coll == "broadcast") return [=](cudaStream_t st) { ok(p->broadcast(b.out, b.out, s.count, t, root, comm, st)); };
  if (coll == "alltoall") {
    return [=](cudaStream_t st) {
      ok(p->groupStart());
      for (std::size_t r = 0; r < n; ++r) {
        ok(p->send(b.in + r * b.block * esz, b.block, t, static_cast<int>(r), comm, st));
        ok(p->recv(b.out + r * b.block * esz, b.block, t, static_cast<int>(r), comm, st));
      }
      ok(p->groupEnd());
    };
  }
  throw std::invalid_argument("braid-bench-device: no device sweep of " + coll);
}

}  // namespace braid::bench
