#include "bootstrap/pmix.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/error.hpp"

namespace braid::bootstrap::pmix {

namespace {

// The few pieces of PMIx's C ABI braid uses, declared here so that no PMIx header is needed to build. They have not
// changed since PMIx 2 (libpmix.so.2 is the soname of PMIx 2 to 5); the sizes and offsets below are those of
// pmix_common.h of PMIx 4.2 (Debian 12's libpmix-dev), checked by static_assert.
namespace abi {

using Status = int;              // pmix_status_t
using Rank = std::uint32_t;      // pmix_rank_t
using DataType = std::uint16_t;  // pmix_data_type_t
using Scope = std::uint8_t;      // pmix_scope_t

constexpr std::size_t kMaxNsLen = 255;                // PMIX_MAX_NSLEN
constexpr std::size_t kMaxKeyLen = 511;               // PMIX_MAX_KEYLEN
constexpr Status kSuccess = 0;                        // PMIX_SUCCESS
constexpr DataType kBool = 1;                         // PMIX_BOOL
constexpr DataType kString = 3;                       // PMIX_STRING
constexpr DataType kInt = 6;                          // PMIX_INT
constexpr Scope kGlobal = 3;                          // PMIX_GLOBAL: visible to local and remote processes
constexpr Rank kRankWildcard = UINT32_MAX - 1;        // PMIX_RANK_WILDCARD: every rank of the namespace
constexpr const char* kCollectData = "pmix.collect";  // PMIX_COLLECT_DATA (bool)
constexpr const char* kTimeout = "pmix.timeout";      // PMIX_TIMEOUT (int seconds, 0 = none)

struct Proc {  // pmix_proc_t
  char nspace[kMaxNsLen + 1];
  Rank rank;
};

struct Value {  // pmix_value_t: a type tag and a 24-byte union (its largest members are three pointers)
  DataType type;
  union {
    bool flag;
    int integer;
    char* string;
    std::uint8_t raw[24];
  } data;
};

struct Info {  // pmix_info_t
  char key[kMaxKeyLen + 1];
  std::uint32_t flags;  // pmix_info_directives_t
  Value value;
};

static_assert(sizeof(Proc) == 260 && offsetof(Proc, rank) == 256);
static_assert(sizeof(Value) == 32 && offsetof(Value, data) == 8);
static_assert(sizeof(Info) == 552 && offsetof(Info, flags) == 512 && offsetof(Info, value) == 520);

}  // namespace abi

struct Library {
  using InitFn = abi::Status (*)(abi::Proc*, abi::Info*, std::size_t);
  using FinalizeFn = abi::Status (*)(const abi::Info*, std::size_t);
  using PutFn = abi::Status (*)(abi::Scope, const char*, abi::Value*);
  using CommitFn = abi::Status (*)();
  using FenceFn = abi::Status (*)(const abi::Proc*, std::size_t, const abi::Info*, std::size_t);
  using GetFn = abi::Status (*)(const abi::Proc*, const char*, const abi::Info*, std::size_t, abi::Value**);
  using ErrorStringFn = const char* (*)(abi::Status);
  using ValueDestructFn = void (*)(abi::Value*);

  InitFn init = nullptr;
  FinalizeFn finalize = nullptr;
  PutFn put = nullptr;
  CommitFn commit = nullptr;
  FenceFn fence = nullptr;
  GetFn get = nullptr;
  ErrorStringFn errorString = nullptr;
  ValueDestructFn valueDestruct = nullptr;  // exported since PMIx 4 only; older ones free a string value by hand
  std::string unavailable;                  // "" when loaded
};

// Loaded once and never unloaded: PMIx keeps a progress thread and atexit state that must not outlive its code.
const Library& library() {
  static const Library lib = [] {
    Library l;
    void* handle = ::dlopen("libpmix.so.2", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      l.unavailable = strCat("cannot load libpmix.so.2: ", why ? why : "unknown dlopen error");
      return l;
    }
    auto symbol = [&](const char* name) {
      void* p = ::dlsym(handle, name);
      if (p == nullptr && l.unavailable.empty()) l.unavailable = strCat("libpmix.so.2 has no ", name);
      return p;
    };
    l.init = reinterpret_cast<Library::InitFn>(symbol("PMIx_Init"));
    l.finalize = reinterpret_cast<Library::FinalizeFn>(symbol("PMIx_Finalize"));
    l.put = reinterpret_cast<Library::PutFn>(symbol("PMIx_Put"));
    l.commit = reinterpret_cast<Library::CommitFn>(symbol("PMIx_Commit"));
    l.fence = reinterpret_cast<Library::FenceFn>(symbol("PMIx_Fence"));
    l.get = reinterpret_cast<Library::GetFn>(symbol("PMIx_Get"));
    l.errorString = reinterpret_cast<Library::ErrorStringFn>(symbol("PMIx_Error_string"));
    l.valueDestruct = reinterpret_cast<Library::ValueDestructFn>(::dlsym(handle, "PMIx_Value_destruct"));
    return l;
  }();
  return lib;
}

[[noreturn]] void failCall(const Library& lib, const char* call, abi::Status status, const std::string& detail = {}) {
  const char* text = lib.errorString ? lib.errorString(status) : nullptr;
  fail(ErrorCode::kUnavailable, {}, call, detail, " failed: ", text ? text : "unknown PMIx error", " (status ", status,
       ")");
}

void copyKey(char* dest, std::size_t capacity, const std::string& text) {
  std::memset(dest, 0, capacity);
  std::memcpy(dest, text.data(), std::min(text.size(), capacity - 1));
}

abi::Info boolInfo(const char* key, bool value) {
  abi::Info info{};
  copyKey(info.key, sizeof info.key, key);
  info.value.type = abi::kBool;
  info.value.data.flag = value;
  return info;
}

abi::Info intInfo(const char* key, int value) {
  abi::Info info{};
  copyKey(info.key, sizeof info.key, key);
  info.value.type = abi::kInt;
  info.value.data.integer = value;
  return info;
}

// PMIx_Init is reference counted, so this pairs with Open MPI's own use when the program also calls MPI_Init.
// Finalising matters: mpirun reports a process that initialised PMIx and exited without finalising as failed.
class Session {
 public:
  explicit Session(const Library& lib) : lib_(lib) {
    const abi::Status status = lib_.init(&self_, nullptr, 0);
    if (status != abi::kSuccess) failCall(lib_, "PMIx_Init", status);
  }
  ~Session() { lib_.finalize(nullptr, 0); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  const abi::Proc& self() const { return self_; }

 private:
  const Library& lib_;
  abi::Proc self_{};
};

}  // namespace

std::string libraryUnavailableReason() { return library().unavailable; }

std::string shareFromRankZero(int rank, const std::string& value, double timeoutSeconds) {
  const Library& lib = library();
  if (!lib.unavailable.empty()) fail(ErrorCode::kUnavailable, {}, "PMIx: ", lib.unavailable);
  // One exchange at a time per process, and a fresh key for each: PMIx caches what a Get returned, so a key reused by
  // a later communicator could hand back the earlier store's address.
  static std::mutex mutex;
  static int calls = 0;
  std::lock_guard lock(mutex);
  const std::string key = strCat("braid.store.", calls++);
  const int timeout = static_cast<int>(std::min<double>(INT_MAX, std::max(1.0, std::ceil(timeoutSeconds))));

  Session session(lib);
  const abi::Proc& self = session.self();
  if (self.rank != static_cast<abi::Rank>(rank)) {
    fail(ErrorCode::kInvalidArgument, {}, "PMIx says this process is rank ", self.rank, " of namespace ", self.nspace,
         " but the launcher's environment says rank ", rank);
  }
  if (rank == 0) {
    abi::Value v{};
    v.type = abi::kString;
    v.data.string = const_cast<char*>(value.c_str());  // PMIx_Put copies the string
    abi::Status status = lib.put(abi::kGlobal, key.c_str(), &v);
    if (status != abi::kSuccess) failCall(lib, "PMIx_Put", status, strCat("(", key, ")"));
    status = lib.commit();
    if (status != abi::kSuccess) failCall(lib, "PMIx_Commit", status);
  }
  abi::Proc everyone{};
  std::memcpy(everyone.nspace, self.nspace, sizeof everyone.nspace);
  everyone.rank = abi::kRankWildcard;
  const abi::Info fenceInfo[] = {boolInfo(abi::kCollectData, true), intInfo(abi::kTimeout, timeout)};
  abi::Status status = lib.fence(&everyone, 1, fenceInfo, 2);
  if (status != abi::kSuccess) failCall(lib, "PMIx_Fence", status, strCat("(namespace ", self.nspace, ")"));
  if (rank == 0) return value;

  abi::Proc root = everyone;
  root.rank = 0;
  const abi::Info getInfo[] = {intInfo(abi::kTimeout, timeout)};
  abi::Value* got = nullptr;
  status = lib.get(&root, key.c_str(), getInfo, 1, &got);
  if (status != abi::kSuccess || got == nullptr) failCall(lib, "PMIx_Get", status, strCat("(rank 0, ", key, ")"));
  std::string result;
  const bool isString = got->type == abi::kString && got->data.string != nullptr;
  if (isString) result = got->data.string;
  const abi::DataType type = got->type;
  // PMIx allocated the value (and its string) with malloc; PMIX_VALUE_RELEASE is destruct + free.
  if (lib.valueDestruct) {
    lib.valueDestruct(got);
  } else if (got->type == abi::kString) {
    std::free(got->data.string);
  }
  std::free(got);
  if (!isString) {
    fail(ErrorCode::kUnavailable, {}, "PMIx_Get(rank 0, ", key, ") returned a value of PMIx type ", type,
         ", not a string");
  }
  return result;
}

}  // namespace braid::bootstrap::pmix
