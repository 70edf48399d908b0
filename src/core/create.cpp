// Making communicators: from the launcher's environment, or from a unique id the caller distributed.
#include <cstring>

#include "algorithms/host/reduce_cpu.hpp"
#include "bootstrap/launch_env.hpp"
#include "bootstrap/shm_rendezvous.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/unique_id.hpp"
#include "braid/braid.hpp"
#include "core/communicator_impl.hpp"

namespace braid {

namespace {

// What the bootstrap leaves behind that must live as long as the communicator.
struct Rendezvous {
  std::unique_ptr<bootstrap::TcpStoreServer> server;  // rank 0 of an environment-started job
  std::unique_ptr<bootstrap::TcpStoreClient> client;
};

void checkWorld(int rank, int size) {
  if (size < 1) fail(ErrorCode::kInvalidArgument, {}, "world size ", size, " must be at least 1");
  if (rank < 0 || rank >= size)
    fail(ErrorCode::kInvalidArgument, {}, "rank ", rank, " out of range for ", size, " ranks");
}

std::unique_ptr<Communicator> join(int rank, int size, std::shared_ptr<Rendezvous> rendezvous,
                                   const Settings& settings) {
  if (settings.transport != "auto" && settings.transport != "shm") {
    fail(ErrorCode::kUnavailable, {}, "BRAID_TRANSPORT=", settings.transport,
         " is not available yet (auto and shm are)");
  }
  if (!settings.isa.empty()) host::setReduceIsaCap(settings.isa);
  const Deadline deadline = Deadline::after(settings.timeoutSeconds);
  const auto layout = transport::FabricLayout::compute(size, settings.shmSlotBytes, settings.shmP2pBytes);
  auto group = bootstrap::joinShmGroup(*rendezvous->client, rank, size, layout.regionBytes, deadline);
  return std::make_unique<Communicator>(
      std::make_unique<core::CommunicatorImpl>(rank, size, std::move(group), settings, std::move(rendezvous)));
}

}  // namespace

std::unique_ptr<Communicator> Communicator::fromEnvironment() {
  const Settings settings = Settings::fromEnvironment();
  const bootstrap::LaunchIdentity id = bootstrap::readLaunchIdentity(settings);
  auto rendezvous = std::make_shared<Rendezvous>();
  if (id.rank == 0) {
    rendezvous->server = std::make_unique<bootstrap::TcpStoreServer>();
    rendezvous->server->start(id.root, id.token);
  }
  rendezvous->client = std::make_unique<bootstrap::TcpStoreClient>(
      id.root, id.token, Deadline::after(settings.timeoutSeconds), settings.timeoutSeconds);
  return join(id.rank, id.size, std::move(rendezvous), settings);
}

UniqueId Communicator::uniqueId() {
  const auto bytes = bootstrap::createUniqueId();
  UniqueId id;
  static_assert(sizeof id.bytes == sizeof bytes.bytes);
  std::memcpy(id.bytes, bytes.bytes.data(), sizeof id.bytes);
  return id;
}

std::unique_ptr<Communicator> Communicator::create(const UniqueId& id, int rank, int size) {
  checkWorld(rank, size);
  const Settings settings = Settings::fromEnvironment();
  bootstrap::UniqueIdBytes bytes;
  std::memcpy(bytes.bytes.data(), id.bytes, sizeof id.bytes);
  const auto decoded = bootstrap::decodeUniqueId(bytes);
  auto rendezvous = std::make_shared<Rendezvous>();
  rendezvous->client = std::make_unique<bootstrap::TcpStoreClient>(
      decoded.root, decoded.token, Deadline::after(settings.timeoutSeconds), settings.timeoutSeconds);
  return join(rank, size, std::move(rendezvous), settings);
}

}  // namespace braid
