// How the braid command fails: it throws braid::Error (braid/types.hpp), the library's one error type, so that a
// command's own errors read and exit like the library's. Messages are concatenated from streamable parts.
#pragma once

#include <cstring>
#include <sstream>
#include <string>
#include <utility>

#include "braid/types.hpp"

namespace braid::tools {

/// strCat("rank ", 3, " of ", 4) == "rank 3 of 4".
template <typename... Parts>
std::string strCat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

/// Throws braid::Error(code, strCat(parts...), context).
template <typename... Parts>
[[noreturn]] void fail(ErrorCode code, const ErrorContext& context, Parts&&... parts) {
  throw Error(code, strCat(std::forward<Parts>(parts)...), context);
}

/// Throws Internal with errno's text: "pipe2 (launcher wake-up pipe): Too many open files".
[[noreturn]] inline void failErrno(const std::string& what, int err) {
  char buf[256];
  // GNU strerror_r returns the message pointer, which may or may not be buf.
  const char* text = strerror_r(err, buf, sizeof buf);
  fail(ErrorCode::kInternal, {}, what, ": ", text);
}

}  // namespace braid::tools
