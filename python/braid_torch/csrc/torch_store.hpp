// braid's KeyValueStore over the c10d::Store torch hands a backend: the communicator meets its peers through the
// store torch already runs (no second port), as Gloo and NCCL do.
#pragma once

#include <chrono>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "braid/braid.hpp"

namespace braid_torch {

class TorchStore final : public braid::KeyValueStore {
 public:
  explicit TorchStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::string& value) override {
    store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
  }
  std::string get(const std::string& key) override {
    const std::vector<uint8_t> v = store_->get(key);
    return std::string(v.begin(), v.end());
  }
  bool wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    // c10d's wait throws on timeout (DistStoreError): braid wants false then, and its own error names the key.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (store_->check(keys)) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override { return store_->add(key, delta); }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace braid_torch
