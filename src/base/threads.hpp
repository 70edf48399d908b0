// Starting the threads braid runs (progress loops, the store server, heartbeats, watchdogs): a thread the system
// cannot give (too many threads, too little memory for its stack) is an Error naming which one, not a
// std::system_error escaping through the library's interface.
#pragma once

#include <system_error>
#include <thread>
#include <utility>

#include "base/error.hpp"

namespace braid {

template <typename F>
std::thread startThread(const char* what, F&& body) {
  try {
    return std::thread(std::forward<F>(body));
  } catch (const std::system_error& e) {
    fail(ErrorCode::kUnavailable, {}, "could not start ", what, ": ", e.what(),
         " (the process is out of threads or memory; see ulimit -u and -v)");
  }
}

}  // namespace braid
