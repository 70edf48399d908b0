// A view of a Store in which every key lives under one prefix: how communicators made from another (split,
// subgroup) rendezvous over their parent's store without reading each other's keys.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/store.hpp"

namespace braid::bootstrap {

class PrefixStore final : public Store {
 public:
  PrefixStore(std::shared_ptr<Store> inner, std::string prefix)
      : inner_(std::move(inner)), prefix_(std::move(prefix) + "/") {}

  void set(const std::string& key, const std::string& value) override { inner_->set(prefix_ + key, value); }
  std::string get(const std::string& key, Deadline deadline) override { return inner_->get(prefix_ + key, deadline); }
  std::int64_t add(const std::string& key, std::int64_t delta) override { return inner_->add(prefix_ + key, delta); }

 private:
  std::shared_ptr<Store> inner_;
  std::string prefix_;
};

}  // namespace braid::bootstrap
