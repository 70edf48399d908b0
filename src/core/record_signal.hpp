// Flight records on demand from outside the process: with BRAID_FLIGHT_RECORDER_SIGNAL=USR1 (or USR2), sending
// the process that signal (`kill -USR1 PID`) makes every live communicator in it write its flight record, without
// stopping anything: how a user looks inside a job that seems stuck. The signal handler only writes a byte to a
// pipe (all a handler may safely do); a watcher thread reads it and writes the files.
#pragma once

#include <string>

namespace braid::core {

class CommunicatorImpl;

/// Installs the handler for `signal` ("USR1", "USR2", with or without "SIG") once per process and starts the
/// watcher; later calls with the same signal do nothing. InvalidArgument naming the knob for any other text;
/// Internal when the pipe, the handler or the thread cannot be made.
void armRecordSignal(const std::string& signal);

/// The communicators the watcher dumps. Unregister before the communicator goes: the watcher holds the registry's
/// lock while it writes, so unregistering waits for a dump in progress.
void registerForRecordSignal(const CommunicatorImpl* comm);
void unregisterForRecordSignal(const CommunicatorImpl* comm);

}  // namespace braid::core
