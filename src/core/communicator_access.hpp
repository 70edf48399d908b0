// The only way from a public Communicator to the communicator behind it, the only way to make one, and the only way
// to an AbortHandle's flag and attachment: braid.hpp names this struct their friend and offers nothing else. Core uses
// it (creation, abort handles, introspection); tests reach it through tests/support/internals.hpp. Tools and benches
// use the public API and braid/introspect.hpp instead.
#pragma once

#include <atomic>
#include <memory>

#include "braid/braid.hpp"
#include "core/communicator_impl.hpp"

namespace braid::core {

struct CommunicatorAccess {
  static CommunicatorImpl& impl(Communicator& c) { return *c.impl_; }
  static const CommunicatorImpl& impl(const Communicator& c) { return *c.impl_; }
  static std::unique_ptr<Communicator> wrap(std::unique_ptr<CommunicatorImpl> impl) {
    return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
  }
  /// The flag a creation made with `abort` waits on (null without a handle).
  static const std::atomic<bool>* abortFlag(const AbortHandle* abort) { return abort ? abort->flag() : nullptr; }
  static void attach(AbortHandle& abort, CommunicatorImpl* comm) { abort.attach(comm); }
};

}  // namespace braid::core
