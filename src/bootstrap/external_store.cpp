#include "bootstrap/external_store.hpp"

#include <algorithm>
#include <cmath>
#include <exception>

#include "base/error.hpp"

namespace braid::bootstrap {

namespace {

// The caller's store may throw anything; braid's callers expect braid::Error naming what failed.
template <typename F>
auto guarded(const char* op, const std::string& key, F&& call) {
  try {
    return call();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(ErrorCode::kUnavailable, {}, "the caller's key-value store failed in ", op, "('", key, "'): ", e.what());
  } catch (...) {
    fail(ErrorCode::kUnavailable, {}, "the caller's key-value store failed in ", op, "('", key,
         "') with a non-standard exception");
  }
}

}  // namespace

ExternalStore::ExternalStore(std::shared_ptr<KeyValueStore> store, std::string keyPrefix)
    : store_(std::move(store)), keyPrefix_(std::move(keyPrefix)) {}

std::unique_ptr<ExternalStore> ExternalStore::claim(std::shared_ptr<KeyValueStore> store, const std::string& prefix,
                                                    int size) {
  if (!store) fail(ErrorCode::kInvalidArgument, {}, "the key-value store is null");
  if (size < 1) fail(ErrorCode::kInvalidArgument, {}, "world size ", size, " must be at least 1");
  // The size is part of the counter's name: sizes that differ would otherwise number the same arrivals differently.
  const std::string base = strCat(prefix, "/", size, "/");
  const std::string counter = base + "arrivals";
  const std::int64_t arrival = guarded("add", counter, [&] { return store->add(counter, 1); });
  if (arrival < 1) {
    fail(ErrorCode::kInvalidArgument, {}, "the key-value store's add('", counter, "', 1) returned ", arrival,
         "; it must return the new value, >= 1");
  }
  const std::int64_t communicator = (arrival - 1) / size;
  return std::unique_ptr<ExternalStore>(new ExternalStore(std::move(store), strCat(base, communicator, "/")));
}

void ExternalStore::set(const std::string& key, const std::string& value) {
  const std::string full = keyPrefix_ + key;
  guarded("set", full, [&] { store_->set(full, value); });
}

std::string ExternalStore::get(const std::string& key, Deadline deadline) {
  const std::string full = keyPrefix_ + key;
  // At least 1 ms: stores such as torch's read a zero timeout as "wait forever". A day caps "never".
  const double seconds = std::clamp(deadline.secondsLeft(), 0.001, 86400.0);
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1000)));
  const bool present = guarded("wait", full, [&] { return store_->wait({full}, timeout); });
  if (!present) {
    fail(ErrorCode::kTimeout, {}, "key-value store get('", full, "') timed out after ", seconds,
         " s: no process set the key");
  }
  return guarded("get", full, [&] { return store_->get(full); });
}

std::int64_t ExternalStore::add(const std::string& key, std::int64_t delta) {
  const std::string full = keyPrefix_ + key;
  return guarded("add", full, [&] { return store_->add(full, delta); });
}

}  // namespace braid::bootstrap
