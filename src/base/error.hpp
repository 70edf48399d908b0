// The error model's helpers: building messages and throwing braid::Error (declared in braid/types.hpp).
#pragma once

#include <sstream>
#include <string>
#include <utility>

#include "braid/types.hpp"

namespace braid {

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
