// What every fuzz harness shares: the rule that bad input may only ever become a braid::Error, and a way to say
// that a property the code promises was broken. A harness traps (the fuzzer then saves the input) on anything else:
// another exception type, a crash, a sanitizer report, or a broken property.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "braid/types.hpp"

namespace braid::fuzz {

inline std::span<const std::byte> bytes(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// A promise the code makes was broken by this input: report and trap.
[[noreturn]] inline void broken(const char* what) {
  std::fprintf(stderr, "fuzz: property broken: %s\n", what);
  __builtin_trap();
}

/// Runs `parse`; a braid::Error is the expected answer to bad input, anything else thrown is a bug.
template <typename F>
bool acceptsOrRejects(F&& parse) {
  try {
    parse();
    return true;
  } catch (const braid::Error&) {
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: %s escaped as a non-braid exception\n", e.what());
    __builtin_trap();
  }
}

}  // namespace braid::fuzz
