// A process environment from a map, for tests of code that reads variables through Settings::Lookup.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "base/config.hpp"

namespace braid::testing {

using Vars = std::map<std::string, std::string>;

inline Settings::Lookup lookupOf(const Vars& vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace braid::testing
