#include "support/rank_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "bootstrap/unique_id.hpp"
#include "core/communicator_impl.hpp"
#include "core/create.hpp"
#include "core/engine_stack.hpp"
#include "support/internals.hpp"
#include "transport/local_fabric.hpp"
#include "transport/memory/memory_local_group.hpp"

namespace braid::testing {

Settings testSettings() {
  Settings s = Settings::fromEnvironment();
  if (!std::getenv("BRAID_TIMEOUT")) s.timeoutSeconds = 60;
  return s;
}

std::vector<std::string> runThreads(int ranks, const Body& body, const Settings& settings) {
  if (settings.transport == "tcp") {
    // Each thread joins through the TCP store that uniqueId() starts here, as separate processes would.
    const UniqueId id = Communicator::uniqueId();
    std::vector<std::string> results(ranks);
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        try {
          auto comm = core::createWithSettings(id, r, ranks, settings);
          body(*comm);
        } catch (const std::exception& e) {
          results[r] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    return results;
  }
  const auto layout = core::localFabricLayout(ranks, settings);
  auto arena = std::make_shared<transport::MemoryArena>(ranks, layout.regionBytes);
  std::vector<std::string> results(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        const auto comm = test::wrap(std::make_unique<core::CommunicatorImpl>(
            r, ranks, std::make_unique<transport::MemoryLocalGroup>(arena, r), settings));
        body(*comm);
      } catch (const std::exception& e) {
        results[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

std::vector<std::string> forkRanks(int ranks, const std::function<std::string(int rank)>& child,
                                   double timeoutSeconds) {
  return forkRanksWith(ranks, child, timeoutSeconds, [] { return ::fork(); });
}

std::vector<std::string> forkRanksWith(int ranks, const std::function<std::string(int rank)>& child,
                                       double timeoutSeconds, const std::function<pid_t()>& forkOnce) {
  std::vector<pid_t> pids(ranks, -1);
  std::vector<int> pipes(ranks, -1);
  std::vector<std::string> results(ranks);
  // A rank that never started is a failure, never an empty (passing) result; the ranks already started would
  // wait for it until their timeout, so they are stopped at once.
  std::string notStarted;
  int failedRank = -1;
  for (int r = 0; r < ranks; ++r) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      const int err = errno;
      notStarted = strCat("rank ", r, ": pipe failed: ", std::strerror(err), " (errno ", err, ")");
      failedRank = r;
      break;
    }
    const pid_t pid = forkOnce();
    if (pid < 0) {
      const int err = errno;
      ::close(fds[0]);
      ::close(fds[1]);
      notStarted = strCat("rank ", r, ": fork failed: ", std::strerror(err), " (errno ", err, ")");
      failedRank = r;
      break;
    }
    if (pid == 0) {
      ::close(fds[0]);
      std::string message;
      try {
        message = child(r);
      } catch (const std::exception& e) {
        message = e.what();
        if (message.empty()) message = "exception with an empty message";
      }
      for (std::size_t done = 0; done < message.size();) {
        const ssize_t n = ::write(fds[1], message.data() + done, message.size() - done);
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
      }
      ::_exit(message.empty() ? 0 : 1);  // skip gtest's and static destructors in the child
    }
    ::close(fds[1]);
    pids[r] = pid;
    pipes[r] = fds[0];
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  }
  if (failedRank >= 0) {
    for (int r = 0; r < ranks; ++r) {
      if (r == failedRank) {
        results[r] = notStarted;
      } else if (pids[r] > 0) {
        results[r] = "stopped, as the run could not start: " + notStarted;
        ::kill(pids[r], SIGKILL);
      } else {
        results[r] = "not started: " + notStarted;
      }
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  std::vector<bool> done(ranks, false);
  int remaining = 0;
  for (int r = 0; r < ranks; ++r) remaining += pids[r] > 0 ? 1 : 0;
  auto drain = [&](int r) {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(pipes[r], buf, sizeof buf)) > 0) results[r].append(buf, static_cast<std::size_t>(n));
  };
  while (remaining > 0) {
    for (int r = 0; r < ranks; ++r) {
      if (done[r] || pids[r] < 0) continue;
      drain(r);
      int status = 0;
      if (::waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        drain(r);
        done[r] = true;
        --remaining;
        if (WIFSIGNALED(status)) {
          results[r] += " killed by signal " + std::to_string(WTERMSIG(status));
        } else if (WEXITSTATUS(status) != 0 && results[r].empty()) {
          results[r] = "exit status " + std::to_string(WEXITSTATUS(status));
        }
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < ranks; ++r) {
        if (!done[r] && pids[r] > 0) {
          ::kill(pids[r], SIGKILL);
          ::waitpid(pids[r], nullptr, 0);
          results[r] += " (rank still running after the test's wall-clock limit: killed)";
        }
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (int fd : pipes) {
    if (fd >= 0) ::close(fd);
  }
  // "" means passed: only a rank whose child exited 0 without a message may leave it so.
  for (int r = 0; r < ranks; ++r) {
    if (!done[r] && results[r].empty()) results[r] = strCat("rank ", r, " produced no result");
  }
  return results;
}

std::vector<std::string> runProcesses(int ranks, const Body& body, double timeoutSeconds,
                                      const std::string& transport) {
  Settings settings = testSettings();
  if (!transport.empty()) settings.transport = transport;
  return runProcessesWith(ranks, settings, body, timeoutSeconds);
}

std::vector<std::string> runProcessesWith(int ranks, const Settings& settings, const Body& body,
                                          double timeoutSeconds) {
  return runProcessesWith(
      ranks, [&](int) { return settings; }, body, timeoutSeconds);
}

std::vector<std::string> runProcessesWith(int ranks, const std::function<Settings(int rank)>& settingsOf,
                                          const Body& body, double timeoutSeconds) {
  const UniqueId id = Communicator::uniqueId();
  auto results = forkRanks(
      ranks,
      [&](int r) {
        auto comm = core::createWithSettings(id, r, ranks, settingsOf(r));
        body(*comm);
        return std::string();
      },
      timeoutSeconds);
  bootstrap::UniqueIdBytes bytes;
  std::memcpy(bytes.bytes.data(), id.bytes, sizeof id.bytes);
  bootstrap::releaseRootServer(bytes);
  return results;
}

void actAsLaunchedRank(int rank, int size, const std::string& root, const std::string& transport,
                       double timeoutSeconds) {
  for (const char* name :
       {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "BRAID_LOCAL_RANK"}) {
    ::unsetenv(name);
  }
  ::setenv("BRAID_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("BRAID_WORLD_SIZE", std::to_string(size).c_str(), 1);
  ::setenv("BRAID_ROOT_ADDR", root.c_str(), 1);
  ::setenv("BRAID_TOKEN", "5eed0fc0ffee5eed0fc0ffee5eed0fc0", 1);
  ::setenv("BRAID_TRANSPORT", transport.c_str(), 1);
  ::setenv("BRAID_TIMEOUT", strCat(timeoutSeconds).c_str(), 1);
}

std::string failures(const std::vector<std::string>& perRank) {
  std::string out;
  for (std::size_t r = 0; r < perRank.size(); ++r) {
    if (!perRank[r].empty()) out += "rank " + std::to_string(r) + ": " + perRank[r] + "\n";
  }
  return out;
}

}  // namespace braid::testing
