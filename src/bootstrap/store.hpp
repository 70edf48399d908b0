// The key-value store every bootstrap runs on (TCP today; file and external stores later), and the two
// collective helpers built on it. Keys and values are byte strings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/deadline.hpp"
#include "base/error.hpp"

namespace braid::bootstrap {

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  // Blocks until key exists or the deadline passes (Timeout naming the key).
  virtual std::string get(const std::string& key, Deadline deadline) = 0;
  // Atomically adds delta to the integer stored at key (0 if absent) and returns the new value.
  // The integer is stored as decimal text, so get(key) reads it back ("3").
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
};

// Every rank contributes `mine` under prefix/rank and receives all ranks' values in rank order.
// A prefix is single-use: a second allGather under the same prefix would read the first one's values.
// Costs size gets per rank, so size^2 requests on the store in total.
inline std::vector<std::string> allGather(Store& store, const std::string& prefix, int rank, int size,
                                          const std::string& mine, Deadline deadline) {
  if (size <= 0 || rank < 0 || rank >= size) {
    fail(ErrorCode::kInvalidArgument, {}, "allGather('", prefix, "'): rank=", rank, " is not within size=", size);
  }
  store.set(strCat(prefix, "/", rank), mine);
  std::vector<std::string> all(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    if (r == rank) {
      all[static_cast<std::size_t>(r)] = mine;
      continue;
    }
    try {
      all[static_cast<std::size_t>(r)] = store.get(strCat(prefix, "/", r), deadline);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kTimeout) throw;
      ErrorContext context;
      context.rank = rank;
      context.peer = r;
      fail(ErrorCode::kTimeout, context, "allGather('", prefix, "'): rank ", r, " never contributed: ", e.message());
    }
  }
  return all;
}

// Every rank of `size` arrives; returns when all did (uses add on a counter key + get on a release key).
// The same name may be reused for consecutive barriers as long as every rank uses it the same number of times:
// arrival n belongs to generation (n-1)/size, and each generation has its own release key.
inline void barrier(Store& store, const std::string& name, int rank, int size, Deadline deadline) {
  if (size <= 0 || rank < 0 || rank >= size) {
    fail(ErrorCode::kInvalidArgument, {}, "barrier('", name, "'): rank=", rank, " is not within size=", size);
  }
  const std::string counter = strCat(name, "/arrived");
  const std::int64_t arrival = store.add(counter, 1);
  const std::int64_t generation = (arrival - 1) / size;
  const std::string release = strCat(name, "/release/", generation);
  if (arrival % size == 0) store.set(release, "1");
  try {
    store.get(release, deadline);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kTimeout) throw;
    // An already-expired deadline makes get a non-blocking read: how many had arrived, for the message.
    std::string arrivedText = "?";
    try {
      const std::int64_t now = std::stoll(store.get(counter, Deadline::after(0)));
      arrivedText = std::to_string(now - generation * size);
    } catch (const std::exception&) {
    }
    ErrorContext context;
    context.rank = rank;
    fail(ErrorCode::kTimeout, context, "barrier('", name, "') timed out: ", arrivedText, " of ", size,
         " ranks arrived");
  }
}

}  // namespace braid::bootstrap
