// Communicators created over a caller-supplied KeyValueStore (the way the PyTorch backend creates them): ranks as
// threads of this process sharing an in-memory store, communicating over shared memory.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "braid/braid.hpp"

namespace braid {
namespace {

// What a caller's store looks like: thread-safe, blocking get, wait with a timeout, decimal counters.
class MemoryStore : public KeyValueStore {
 public:
  void set(const std::string& key, const std::string& value) override {
    {
      std::lock_guard lock(mutex_);
      values_[key] = value;
    }
    changed_.notify_all();
  }
  std::string get(const std::string& key) override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return values_.count(key) > 0; });
    return values_.at(key);
  }
  bool wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    EXPECT_GE(timeout.count(), 1);
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] {
      for (const auto& key : keys) {
        if (values_.count(key) == 0) return false;
      }
      return true;
    });
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    std::int64_t now = 0;
    {
      std::lock_guard lock(mutex_);
      auto it = values_.find(key);
      now = (it == values_.end() ? 0 : std::stoll(it->second)) + delta;
      values_[key] = std::to_string(now);
    }
    changed_.notify_all();
    return now;
  }
  std::set<std::string> keys() {
    std::lock_guard lock(mutex_);
    std::set<std::string> out;
    for (const auto& [key, value] : values_) out.insert(key);
    return out;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

// Ranks [0, size) as threads: each creates a communicator over `store` under `prefix` and allreduces rank + 1.
std::vector<std::string> allreduceOverStore(std::shared_ptr<KeyValueStore> store, int size,
                                            const std::string& prefix = "braid") {
  std::vector<std::string> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto comm = Communicator::create(store, r, size, prefix);
        std::int32_t v = r + 1;
        comm->allreduce(&v, &v, 1, DataType::kInt32, ReduceKind::kSum);
        if (v != size * (size + 1) / 2 || comm->rank() != r || comm->size() != size) {
          errors[r] = "wrong sum " + std::to_string(v);
        }
        comm->barrier();  // nobody destroys its communicator while a peer still reads its memory
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

bool allEmpty(const std::vector<std::string>& errors) {
  for (const auto& e : errors) {
    if (!e.empty()) return false;
  }
  return true;
}

TEST(ExternalStore, ThreadRanksAllreduce) {
  auto store = std::make_shared<MemoryStore>();
  const auto errors = allreduceOverStore(store, 4);
  EXPECT_TRUE(allEmpty(errors)) << ::testing::PrintToString(errors);
  for (const auto& key : store->keys()) EXPECT_EQ(key.rfind("braid/4/", 0), 0u) << key;
}

TEST(ExternalStore, CommunicatorsOneAfterAnotherGetTheirOwnKeys) {
  auto store = std::make_shared<MemoryStore>();
  for (int round = 0; round < 3; ++round) {
    const auto errors = allreduceOverStore(store, 3);
    ASSERT_TRUE(allEmpty(errors)) << "round " << round << ": " << ::testing::PrintToString(errors);
  }
  std::set<std::string> namespaces;
  for (const auto& key : store->keys()) {
    if (key != "braid/3/arrivals") namespaces.insert(key.substr(0, key.find('/', std::string("braid/3/").size())));
  }
  EXPECT_EQ(namespaces, (std::set<std::string>{"braid/3/0", "braid/3/1", "braid/3/2"}));
}

TEST(ExternalStore, ConcurrentGroupsWithTheirOwnPrefixes) {
  auto store = std::make_shared<MemoryStore>();
  std::vector<std::string> a, b;
  std::thread first([&] { a = allreduceOverStore(store, 2, "group-a"); });
  std::thread second([&] { b = allreduceOverStore(store, 3, "group-b"); });
  first.join();
  second.join();
  EXPECT_TRUE(allEmpty(a)) << ::testing::PrintToString(a);
  EXPECT_TRUE(allEmpty(b)) << ::testing::PrintToString(b);
}

// A store that fails the way a caller's store might.
class FailingStore : public MemoryStore {
 public:
  explicit FailingStore(bool throwOnAdd) : throwOnAdd_(throwOnAdd) {}
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    if (throwOnAdd_) throw std::runtime_error("connection to the store lost");
    return MemoryStore::add(key, delta);
  }
  bool wait(const std::vector<std::string>&, std::chrono::milliseconds) override { return false; }

 private:
  bool throwOnAdd_;
};

TEST(ExternalStore, StoreFailuresBecomeBraidErrors) {
  try {
    Communicator::create(std::make_shared<FailingStore>(true), 0, 1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_EQ(e.message(),
              "the caller's key-value store failed in add('braid/1/arrivals'): connection to the store lost");
  }
  try {
    Communicator::create(std::make_shared<FailingStore>(false), 0, 1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    EXPECT_NE(e.message().find("get('braid/1/0/"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Communicator::create(std::shared_ptr<KeyValueStore>(), 0, 1), Error);
  EXPECT_THROW(Communicator::create(std::make_shared<MemoryStore>(), 1, 1), Error);
}

}  // namespace
}  // namespace braid
