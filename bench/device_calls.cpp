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

Call braidCall(Communicator& c, const Setup& s) {
  const std::string& coll = s.o.collective;
  const auto t = braidType(s.o.dtype);
  const auto op = braidOp(s.o.op);
  const std::size_t n = static_cast<std::size_t>(s.n);
  const std::size_t block = braid::bench::overBlocks(coll) ? s.count / n : s.count;
  const std::size_t esz = braid::bench::dtypeBytes(s.o.dtype);
  std::byte* in = s.o.inplace ? s.recv : s.send;
  std::byte* out = s.recv;
  const int root = s.o.root;
  if (coll == "allreduce") return [=, &c](cudaStream_t st) { c.allreduce(in, out, s.count, t, op, {.stream = st}); };
  if (coll == "reduce") return [=, &c](cudaStream_t st) { c.reduce(in, out, s.count, t, op, root, {.stream = st}); };
  if (coll == "reducescatter") {
    std::byte* o2 = s.o.inplace ? s.recv + static_cast<std::size_t>(s.me) * block * esz : s.recv;
    return [=, &c](cudaStream_t st) { c.reduceScatter(in, o2, block, t, op, {.stream = st}); };
  }
  if (coll == "allgather") {
    std::byte* i2 = s.o.inplace ? s.recv + static_cast<std::size_t>(s.me) * block * esz : s.send;
    return [=, &c](cudaStream_t st) { c.allgather(i2, out, block, t, {.stream = st}); };
  }
  if (coll == "broadcast") return [=, &c](cudaStream_t st) { c.broadcast(out, s.count, t, root, {.stream = st}); };
  if (coll == "alltoall") return [=, &c](cudaStream_t st) { c.alltoall(in, out, block, t, {.stream = st}); };
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
  const std::size_t block = braid::bench::overBlocks(coll) ? s.count / n : s.count;
  const std::size_t esz = braid::bench::dtypeBytes(s.o.dtype);
  std::byte* in = s.o.inplace ? s.recv : s.send;
  std::byte* out = s.recv;
  const int root = s.o.root;
  const Nccl* p = &nc;
  auto ok = [p](ncclResult_t r) { checkNccl(*p, r, "nccl call"); };
  if (coll == "allreduce") return [=](cudaStream_t st) { ok(p->allReduce(in, out, s.count, t, op, comm, st)); };
  if (coll == "reduce") return [=](cudaStream_t st) { ok(p->reduce(in, out, s.count, t, op, root, comm, st)); };
  if (coll == "reducescatter") {
    std::byte* o2 = s.o.inplace ? s.recv + static_cast<std::size_t>(s.me) * block * esz : s.recv;
    return [=](cudaStream_t st) { ok(p->reduceScatter(in, o2, block, t, op, comm, st)); };
  }
  if (coll == "allgather") {
    std::byte* i2 = s.o.inplace ? s.recv + static_cast<std::size_t>(s.me) * block * esz : s.send;
    return [=](cudaStream_t st) { ok(p->allGather(i2, out, block, t, comm, st)); };
  }
  if (coll == "broadcast") return [=](cudaStream_t st) { ok(p->broadcast(out, out, s.count, t, root, comm, st)); };
  if (coll == "alltoall") {
    return [=](cudaStream_t st) {
      ok(p->groupStart());
      for (std::size_t r = 0; r < n; ++r) {
        ok(p->send(in + r * block * esz, block, t, static_cast<int>(r), comm, st));
        ok(p->recv(out + r * block * esz, block, t, static_cast<int>(r), comm, st));
      }
      ok(p->groupEnd());
    };
  }
  throw std::invalid_argument("braid-bench-device: no device sweep of " + coll);
}

}  // namespace braid::bench
