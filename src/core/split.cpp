// Communicators made from another: split (collective, by color and key) and subgroup (the listed ranks only).
// Both meet over the parent's bootstrap store, under a prefix no other communicator uses, and then join like any
// new communicator: shared memory when the members share a host, else a TCP mesh of their own.
#include <algorithm>
#include <set>

#include "base/error.hpp"
#include "bootstrap/prefix_store.hpp"
#include "braid/braid.hpp"
#include "core/communicator_impl.hpp"
#include "core/create.hpp"

namespace braid {

namespace {

const std::shared_ptr<bootstrap::Store>& storeOf(core::CommunicatorImpl& impl, const char* op) {
  if (!impl.store()) {
    fail(ErrorCode::kUnavailable, ErrorContext{.rank = impl.rank(), .op = op},
         "this communicator was made without a rendezvous store (thread ranks over the in-memory transport), so no "
         "communicator can be made from it");
  }
  return impl.store();
}

}  // namespace

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  core::CommunicatorImpl& parent = *impl_;
  const CallContext ctx{.rank = rank(), .peer = -1, .op = "split", .seq = -1};
  parent.throwIfBroken(ctx);
  const auto& store = storeOf(parent, "split");
  // Every rank learns every rank's (color, key) through this communicator itself: an allgather of two int64 per
  // rank, which a peer sees as one (split is collective, called at the same point on every rank, as MPI's is).
  const std::int64_t mine[2] = {color, key};
  std::vector<std::int64_t> all(2 * static_cast<std::size_t>(size()));
  try {
    allgather(mine, all.data(), 2, DataType::kInt64);
  } catch (const Error& e) {
    ErrorContext at = e.context();
    at.op = "split";
    throw Error(e.code(),
                strCat("split's exchange of colors and keys (an allgather of 2 int64 a rank) failed: ", e.message()),
                at);
  }
  const std::int64_t number = parent.nextSplitNumber();
  if (color < 0) return nullptr;
  std::vector<std::pair<std::int64_t, int>> members;  // (key, parent rank), for ranks of my color
  for (int r = 0; r < size(); ++r) {
    if (all[2 * r] == color) members.emplace_back(all[2 * r + 1], r);
  }
  std::sort(members.begin(), members.end());
  const int newRank =
      static_cast<int>(std::find_if(members.begin(), members.end(), [&](const auto& m) { return m.second == rank(); }) -
                       members.begin());
  auto scoped = std::make_shared<bootstrap::PrefixStore>(store, strCat("split", number, "/color", color));
  return core::joinOverStore(std::move(scoped), parent.keepAlive(), newRank, static_cast<int>(members.size()),
                             parent.settings());
}

std::unique_ptr<Communicator> Communicator::subgroup(const std::vector<int>& ranks) {
  core::CommunicatorImpl& parent = *impl_;
  const CallContext ctx{.rank = rank(), .op = "subgroup"};
  parent.throwIfBroken(ctx);
  if (ranks.empty()) fail(ErrorCode::kInvalidArgument, ctx, "subgroup of no ranks");
  std::set<int> seen;
  int newRank = -1;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    if (r < 0 || r >= size()) fail(ErrorCode::kInvalidArgument, ctx, "subgroup names rank ", r, " of ", size());
    if (!seen.insert(r).second) fail(ErrorCode::kInvalidArgument, ctx, "subgroup names rank ", r, " twice");
    if (r == rank()) newRank = static_cast<int>(i);
  }
  if (newRank < 0) {
    fail(ErrorCode::kInvalidArgument, ctx, "rank ", rank(), " called subgroup but is not in its list of ", ranks.size(),
         " ranks");
  }
  return core::makeSubgroup(parent, ranks);
}

std::unique_ptr<Communicator> core::makeSubgroup(CommunicatorImpl& parent, const std::vector<int>& ranks) {
  const int newRank = static_cast<int>(std::find(ranks.begin(), ranks.end(), parent.rank()) - ranks.begin());
  const auto& store = storeOf(parent, "subgroup");
  // The list names the group (hashed: a long list must not make a long key); the count of earlier subgroups of the
  // same list tells repeated ones apart.
  std::uint64_t hash = 1469598103934665603ull;
  for (int r : ranks) hash = (hash ^ static_cast<std::uint64_t>(r)) * 1099511628211ull;
  auto scoped = std::make_shared<bootstrap::PrefixStore>(
      store, strCat("group", ranks.size(), "-", std::hex, hash, std::dec, "/", parent.nextSubgroupNumber(ranks)));
  try {
    return core::joinOverStore(std::move(scoped), parent.keepAlive(), newRank, static_cast<int>(ranks.size()),
                               parent.settings());
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kTimeout) throw;
    // The members meet under their list: a member that passed another list (or order) meets no one.
    std::string list;
    for (int r : ranks) list += strCat(list.empty() ? "" : ",", r);
    throw Error(ErrorCode::kTimeout,
                strCat("subgroup [", list, "]: its other members did not join (did every member pass this list, in ",
                       "this order, and call subgroup as often? ranks below are places in the list): ", e.message()),
                ErrorContext{.rank = parent.rank(), .peer = -1, .op = "subgroup", .seq = -1});
  }
}

}  // namespace braid
