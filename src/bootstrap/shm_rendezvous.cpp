#include "bootstrap/shm_rendezvous.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "bootstrap/unique_id.hpp"

namespace braid::bootstrap {

namespace {

struct RankInfo {
  transport::ShmPeerInfo peer;
  std::string bootId;
  std::size_t regionBytes = 0;
};

std::string encode(const RankInfo& info) {
  std::ostringstream out;
  out << info.peer.segmentName << '\n'
      << info.peer.pid << '\n'
      << info.peer.pidNamespace << '\n'
      << info.bootId << '\n'
      << info.regionBytes << '\n';
  return out.str();
}

RankInfo decode(const std::string& text, int rank) {
  std::istringstream in(text);
  RankInfo info;
  std::string pid, bytes;
  if (!std::getline(in, info.peer.segmentName) || !std::getline(in, pid) || !std::getline(in, info.peer.pidNamespace) ||
      !std::getline(in, info.bootId) || !std::getline(in, bytes)) {
    fail(ErrorCode::kInternal, ErrorContext{.rank = -1, .peer = rank, .op = "create"},
         "malformed shared-memory info from rank ", rank);
  }
  info.peer.pid = static_cast<pid_t>(std::stol(pid));
  info.regionBytes = std::stoull(bytes);
  return info;
}

// The segments' own errors say what failed but not where: this rank, and the peer whose segment it is.
template <typename F>
auto inContext(const ErrorContext& ctx, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.context().rank >= 0) throw;
    throw Error(e.code(), e.message(), ctx);
  }
}

}  // namespace

std::string bootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::unique_ptr<transport::ShmLocalGroup> joinShmGroup(Store& store, int rank, int size, std::size_t regionBytes,
                                                       Deadline deadline) {
  const ErrorContext ctx{.rank = rank, .op = "create"};
  // A fresh tag per communicator keeps segment names unique across jobs and communicators on one host.
  if (rank == 0) store.set("shm/tag", randomToken().substr(0, 16));
  const std::string tag = store.get("shm/tag", deadline);

  RankInfo mine;
  mine.peer.segmentName = "/braid-" + tag + "-" + std::to_string(rank);
  mine.peer.pid = ::getpid();
  mine.peer.pidNamespace = transport::ShmLocalGroup::pidNamespace();
  mine.bootId = bootId();
  mine.regionBytes = regionBytes;
  transport::ShmSegment own =
      inContext(ctx, [&] { return transport::ShmSegment::create(mine.peer.segmentName, regionBytes); });

  const auto all = allGather(store, "shm/info", rank, size, encode(mine), deadline);
  std::vector<transport::ShmPeerInfo> peers;
  std::vector<transport::ShmSegment> segments;
  for (int r = 0; r < size; ++r) {
    RankInfo info = r == rank ? mine : decode(all[r], r);
    if (info.bootId != mine.bootId) {
      ErrorContext c = ctx;
      c.peer = r;
      fail(ErrorCode::kUnavailable, c, "rank ", r, " runs on another host (boot id ", info.bootId, " vs ", mine.bootId,
           "): shared memory joins the ranks of one host only; across hosts leave BRAID_TRANSPORT unset (auto) or set "
           "tcp");
    }
    if (info.regionBytes != regionBytes) {
      ErrorContext c = ctx;
      c.peer = r;
      fail(ErrorCode::kInvalidArgument, c, "rank ", r, " uses a ", info.regionBytes, "-byte region but this rank ",
           regionBytes,
           ": set BRAID_SHM_SLOT_BYTES, BRAID_SHM_P2P_BYTES and BRAID_SHM_THREADS alike on every rank (auto threads "
           "follow the host's CPUs and the size of /dev/shm, which every rank must see alike)");
    }
    if (r == rank) {
      segments.push_back(std::move(own));
    } else {
      ErrorContext c = ctx;
      c.peer = r;
      segments.push_back(inContext(c, [&] { return transport::ShmSegment::open(info.peer.segmentName, regionBytes); }));
    }
    peers.push_back(info.peer);
  }
  auto group = std::make_unique<transport::ShmLocalGroup>(rank, std::move(segments), peers);
  barrier(store, "shm/attached", rank, size, deadline);
  group->unlinkOwn();
  return group;
}

}  // namespace braid::bootstrap
