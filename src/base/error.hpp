// The error model's helpers: building messages and throwing braid::Error (declared in braid/types.hpp).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

#include "braid/types.hpp"

namespace braid {

/// How a call names itself in the errors it raises: braid::ErrorContext without its string, so that the context every
/// call carries costs it no copy of its name. `op` must outlive the context: every call's name is a string literal.
/// Converts to the ErrorContext an Error carries where one is thrown.
struct CallContext {
  int rank = -1;
  int peer = -1;
  const char* op = "";
  std::int64_t seq = -1;

  operator ErrorContext() const { return ErrorContext{.rank = rank, .peer = peer, .op = op, .seq = seq}; }
};

/// Concatenates anything streamable: strCat("rank ", 3, " of ", 4).
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

/// Throws Internal with errno's text: "shm_open(/braid-1): Permission denied".
[[noreturn]] void failErrno(const std::string& what, int err);

}  // namespace braid
