#include "errors.hpp"

namespace braid::nccl {

namespace {

thread_local std::string last;

}  // namespace

ncclResult_t resultOf(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return ncclInvalidArgument;
    case ErrorCode::kMismatch:
    case ErrorCode::kAborted:
      return ncclInvalidUsage;
    case ErrorCode::kPeerLost:
    case ErrorCode::kTimeout:
      return ncclRemoteError;
    case ErrorCode::kUnavailable:
      return ncclSystemError;
    case ErrorCode::kInternal:
      return ncclInternalError;
  }
  return ncclInternalError;
}

ncclResult_t fail(ncclResult_t result, const char* function, const std::string& message) noexcept {
  try {
    last = std::string(function) + ": " + message;
  } catch (...) {
    last.clear();  // no memory for the text: the result still says what kind of failure it was
  }
  return result;
}

const char* lastError() noexcept { return last.c_str(); }

ncclResult_t notServed(const char* function, const char* what) noexcept {
  return fail(ncclInvalidUsage, function,
              std::string(what) + " is not served by braid (README, \"NCCL's API\", lists what is)");
}

}  // namespace braid::nccl
