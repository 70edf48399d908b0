// The short texts braid takes from launchers and users: Slurm host lists, BRAID_IFNAME specs, HOST:PORT
// addresses, unique ids (128 bytes passed between processes) and every knob's value. Properties: a bad text is a
// braid::Error naming it, never a crash; a host list's expansion honours its limit; an address that parses prints
// as text that parses to the same address; a unique id that decodes re-encodes to the same bytes' meaning.
#include <algorithm>
#include <cstring>
#include <string>

#include "base/config.hpp"
#include "bootstrap/slurm_hostlist.hpp"
#include "bootstrap/unique_id.hpp"
#include "fuzz/fuzz_support.hpp"
#include "transport/tcp/interfaces.hpp"
#include "transport/tcp/socket.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace braid;
  const std::string_view input = fuzz::text(data, size);

  fuzz::acceptsOrRejects([&] {
    const auto hosts = bootstrap::expandSlurmHostlist(input, 64);
    if (hosts.size() > 64) fuzz::broken("a host list expanded past its limit");
  });

  (void)tcp::InterfaceSpec::parse(input).admits("eth0");

  fuzz::acceptsOrRejects([&] {
    const tcp::Address a = tcp::Address::parse(input);
    const tcp::Address b = tcp::Address::parse(a.toString());
    if (b.toString() != a.toString()) fuzz::broken("an address does not survive printing and parsing");
  });

  bootstrap::UniqueIdBytes id{};
  std::memcpy(id.bytes.data(), data, std::min(size, id.bytes.size()));
  fuzz::acceptsOrRejects([&] {
    const bootstrap::DecodedId decoded = bootstrap::decodeUniqueId(id);
    const bootstrap::DecodedId again =
        bootstrap::decodeUniqueId(bootstrap::encodeUniqueId(decoded.root, decoded.token));
    if (again.root.toString() != decoded.root.toString() || again.token != decoded.token) {
      fuzz::broken("a unique id changes on a round trip");
    }
  });

  // Every knob given this text at once: each either takes it or names itself in the error.
  fuzz::acceptsOrRejects([&] {
    (void)Settings::fromEnvironment(
        [&](const std::string&) -> std::optional<std::string> { return std::string(input); });
  });
  return 0;
}
