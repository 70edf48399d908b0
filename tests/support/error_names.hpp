// Whether an error names a rank: the fault tests require every failure to say who failed.
#pragma once

#include <cctype>
#include <string>

#include "braid/types.hpp"

namespace braid::testing {

/// Whether `text` says "peer R" or "rank R" with R exactly `r`: not "peer 12", nor "peer 127.0.0.1:5000" (an
/// address that merely starts with the digits), but "peer 1's process" or "rank 1." at the end of a sentence.
inline bool mentionsRank(const std::string& text, int r) {
  auto digit = [&](std::size_t i) { return i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); };
  for (const char* word : {"peer ", "rank "}) {
    const std::string part = word + std::to_string(r);
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
      const std::size_t end = at + part.size();
      if (!digit(end) && !(end < text.size() && text[end] == '.' && digit(end + 1))) return true;
    }
  }
  return false;
}

/// Whether `e` names rank `r`: as the peer of its context, or in its message.
inline bool namesRank(const Error& e, int r) { return e.context().peer == r || mentionsRank(e.message(), r); }

}  // namespace braid::testing
