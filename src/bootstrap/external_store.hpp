// The caller's KeyValueStore (public API) seen as a bootstrap::Store, with every key under one communicator's
// namespace so that communicators sharing the caller's store never read each other's keys.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/store.hpp"
#include "braid/braid.hpp"

namespace braid::bootstrap {

class ExternalStore : public Store {
 public:
  /// Claims the next communicator slot of `size` ranks under `prefix`: the n-th arrival of a rank at
  /// "<prefix>/<size>/arrivals" belongs to communicator (n-1)/size, whose keys all start "<prefix>/<size>/<that>/".
  /// This numbering holds because no rank finishes creating communicator k before every rank arrived for it.
  static std::unique_ptr<ExternalStore> claim(std::shared_ptr<KeyValueStore> store, const std::string& prefix,
                                              int size);

  void set(const std::string& key, const std::string& value) override;
  /// wait (with what is left of the deadline, at least 1 ms) then get: Timeout naming the key when wait says no.
  std::string get(const std::string& key, Deadline deadline) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;

  /// "<prefix>/<size>/<n>/": what every key of this communicator starts with.
  const std::string& keyPrefix() const { return keyPrefix_; }

 private:
  ExternalStore(std::shared_ptr<KeyValueStore> store, std::string keyPrefix);

  std::shared_ptr<KeyValueStore> store_;
  std::string keyPrefix_;
};

}  // namespace braid::bootstrap
