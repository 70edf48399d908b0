// How braid's failures become NCCL's results: one table from braid::ErrorCode to ncclResult_t, and the thread's
// last error message (ncclGetLastError), which keeps braid's text (rank, peer, operation, sequence number).
#pragma once

#include <nccl.h>

#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "braid/types.hpp"

namespace braid::nccl {

/// A call NCCL's API forbids in the state it is made in (ncclGroupEnd outside a group, a suspended communicator,
/// what braid does not serve): ncclInvalidUsage, with this message.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// InvalidArgument -> ncclInvalidArgument; Mismatch and Aborted -> ncclInvalidUsage (the ranks called differently,
/// or the communicator was aborted here); PeerLost and Timeout -> ncclRemoteError (a peer failed or never came);
/// Unavailable -> ncclSystemError; Internal -> ncclInternalError.
ncclResult_t resultOf(ErrorCode code) noexcept;

/// Records "`function`: `message`" as this thread's last error and returns `result`.
ncclResult_t fail(ncclResult_t result, const char* function, const std::string& message) noexcept;
/// What braid does not serve: `function` fails as invalid usage, its message saying that `what` is not served.
ncclResult_t notServed(const char* function, const char* what) noexcept;

/// This thread's last error message ("" before any).
const char* lastError() noexcept;

/// Runs `body` (returning nothing, or an ncclResult_t), turning every exception into a result and the last error:
/// nothing escapes into the C caller.
template <typename Body>
ncclResult_t guarded(const char* function, Body&& body) noexcept {
  try {
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      return ncclSuccess;
    } else {
      return body();
    }
  } catch (const Error& e) {
    return fail(resultOf(e.code()), function, e.what());
  } catch (const UsageError& e) {
    return fail(ncclInvalidUsage, function, e.what());
  } catch (const std::bad_alloc&) {
    return fail(ncclSystemError, function, "out of host memory");
  } catch (const std::exception& e) {
    return fail(ncclInternalError, function, e.what());
  } catch (...) {
    return fail(ncclInternalError, function, "an unknown exception");
  }
}

}  // namespace braid::nccl
