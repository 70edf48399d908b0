// Which network interfaces TCP uses: this host's interfaces (getifaddrs) and the BRAID_IFNAME choice among them,
// with NCCL_SOCKET_IFNAME's syntax so that a site's NCCL setting carries over unchanged.
//
// The choice is a pure function of a list of Interface records, so every rule is unit-tested from fixtures;
// only listInterfaces() touches the system.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace braid::tcp {

/// One address of one interface (an interface with two addresses gives two records). `family` is AF_INET,
/// AF_INET6, or AF_UNSPEC for an interface that has no IP address (kept so errors can name it).
struct Interface {
  std::string name;     // "eth0"
  int family = 0;       // AF_INET, AF_INET6 or AF_UNSPEC
  std::string address;  // numeric, without scope: "10.0.0.5", "fe80::1"; empty for AF_UNSPEC
  bool up = false;
  bool loopback = false;

  /// IPv6 fe80::/10 or IPv4 169.254/16: valid on one link only, and an IPv6 one needs its scope to be dialled.
  bool linkLocal() const;
  /// The host text peers and bind() take: the address, plus "%name" for IPv6 link-local (its scope).
  std::string hostForPeers() const;
  /// "eth0 10.0.0.5" / "eth1 (no address, down)": for logs and errors.
  std::string describe() const;

  bool operator==(const Interface&) const = default;
};

/// A parsed BRAID_IFNAME: "eth,ib" (prefixes), "^docker,lo" (exclude), "=eth0" (exact), "^=eth0" (both).
struct InterfaceSpec {
  std::vector<std::string> names;  // empty entries dropped
  bool exclude = false;
  bool exact = false;

  static InterfaceSpec parse(std::string_view text);
  /// Whether `name` passes this spec. No names (BRAID_IFNAME empty, "^" or "=") passes every name.
  bool admits(std::string_view name) const;
};

/// This host's interfaces and their addresses, in getifaddrs order. Throws Internal when getifaddrs fails.
std::vector<Interface> listInterfaces();

/// The addresses TCP may use, best first. Only interfaces that are up and have an IP address count.
///  - `spec` empty or an exclude list: among the admitted interfaces, loopback and container/VM bridges (docker*,
///    veth*, virbr*, br-*) are skipped when any other is admitted; else bridges come first, loopback last.
///  - an include list: exactly the admitted interfaces (loopback or bridges too, when named), loopback last.
/// Within that order IPv4 comes before IPv6, and link-local addresses after the rest: they reach one link only.
/// An empty result throws InvalidArgument naming BRAID_IFNAME's value and every interface in `all`.
std::vector<Interface> selectInterfaces(const std::vector<Interface>& all, std::string_view spec);

/// The addresses a TCP mesh listens on, one per rail (a network a pair's streams take in turn). Several only when
/// `spec` is an include list that admits several interfaces ("eth" with eth0 and eth1, "=ens1,ens2"): then the best
/// address of each, in selectInterfaces' order, those of the first one's family and locality. Otherwise (the
/// default, an exclude list, one interface) the single best address: an interface nobody named may not reach the
/// peers. Same errors as selectInterfaces.
std::vector<Interface> railInterfaces(const std::vector<Interface>& all, std::string_view spec);

}  // namespace braid::tcp
