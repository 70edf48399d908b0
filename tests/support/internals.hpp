// What tests may reach behind the public Communicator (its engines, local group and settings), and how they make
// one around an engine of their own. Tests only: the public header offers neither.
#pragma once

#include <memory>

#include "core/communicator_access.hpp"

namespace braid::test {

inline core::CommunicatorImpl& implOf(Communicator& c) { return core::CommunicatorAccess::impl(c); }
inline const core::CommunicatorImpl& implOf(const Communicator& c) { return core::CommunicatorAccess::impl(c); }
inline std::unique_ptr<Communicator> wrap(std::unique_ptr<core::CommunicatorImpl> impl) {
  return core::CommunicatorAccess::wrap(std::move(impl));
}

}  // namespace braid::test
