#include "group.hpp"

#include <algorithm>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "comm.hpp"

namespace braid::nccl {

namespace {

struct GroupState {
  int depth = 0;
  std::vector<Deferred> calls;
  std::vector<ncclComm_t> creations;
};

thread_local GroupState group;

// Each communicator's point-to-point calls since its last collective, posted as one group (on the stream of the
// first of them).
struct P2pBatch {
  ncclComm_t comm;
  std::vector<P2pOp> ops;
  CUstream_st* stream;
};

// Walks the deferred calls in order: each communicator's point-to-point calls go to `batch` together, before that
// communicator's next collective or at the end; collectives go to `call`.
template <typename Batch, typename Call>
void inOrder(std::vector<Deferred>& calls, Batch&& batch, Call&& call) {
  std::vector<P2pBatch> pending;
  auto flush = [&](ncclComm_t comm) {
    auto it = std::find_if(pending.begin(), pending.end(), [&](const P2pBatch& b) { return b.comm == comm; });
    if (it == pending.end()) return;
    P2pBatch ready = std::move(*it);
    pending.erase(it);
    batch(ready);
  };
  for (Deferred& deferred : calls) {
    if (deferred.p2p) {
      auto it =
          std::find_if(pending.begin(), pending.end(), [&](const P2pBatch& b) { return b.comm == deferred.comm; });
      if (it == pending.end()) it = pending.insert(pending.end(), P2pBatch{deferred.comm, {}, deferred.stream});
      it->ops.push_back(*deferred.p2p);
      continue;
    }
    flush(deferred.comm);
    call(deferred);
  }
  while (!pending.empty()) flush(pending.front().comm);
}

// One communicator: every call on this thread, as the blocking calls they would have been.
void runHere(std::vector<Deferred>& calls) {
  inOrder(
      calls, [](P2pBatch& b) { communicatorOf(b.comm).group(b.ops, {.stream = b.stream, .streamAsync = true}); },
      [](Deferred& d) { d.run(communicatorOf(d.comm)); });
}

// Several communicators: each call started on its communicator's own thread, then all waited for.
void startEverywhere(std::vector<Deferred>& calls) {
  std::vector<Work> works;
  std::exception_ptr first;
  try {
    inOrder(
        calls,
        [&](P2pBatch& b) {
          works.push_back(
              communicatorOf(b.comm).groupAsync(std::move(b.ops), {.stream = b.stream, .streamAsync = true}));
        },
        [&](Deferred& d) { works.push_back(d.start(communicatorOf(d.comm))); });
  } catch (...) {
    first = std::current_exception();
  }
  // Every started call ends before the group does, failed or not.
  for (const Work& work : works) {
    try {
      work.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace

bool grouping() { return group.depth > 0; }

void groupStart() { ++group.depth; }

void defer(Deferred call) { group.calls.push_back(std::move(call)); }

void deferCreation(ncclComm_t comm) { group.creations.push_back(comm); }

void groupEnd(bool simulate) {
  if (group.depth == 0) throw Error(ErrorCode::kInvalidArgument, "ncclGroupEnd without ncclGroupStart");
  if (--group.depth > 0) return;
  std::vector<Deferred> calls = std::move(group.calls);
  std::vector<ncclComm_t> creations = std::move(group.creations);
  group.calls.clear();
  group.creations.clear();
  std::exception_ptr first;
  for (ncclComm_t comm : creations) {
    try {
      (void)communicatorOf(comm);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  if (simulate || calls.empty()) return;
  std::vector<std::unique_ptr<Use>> uses;  // every communicator of the group is in use until it ends
  std::vector<ncclComm_t> used;
  for (const Deferred& call : calls) {
    if (std::find(used.begin(), used.end(), call.comm) != used.end()) continue;
    used.push_back(call.comm);
    uses.push_back(std::make_unique<Use>(call.comm));
  }
  bool one = true;
  for (const Deferred& call : calls) one = one && call.comm == calls.front().comm;
  if (one) {
    runHere(calls);
  } else {
    startEverywhere(calls);
  }
}

}  // namespace braid::nccl
