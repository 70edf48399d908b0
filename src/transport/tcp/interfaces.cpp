#include "transport/tcp/interfaces.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <set>

#include "base/error.hpp"

namespace braid::tcp {

namespace {

// Container and VM bridges reach only this host's containers and VMs; a peer on another host cannot dial them
// (NCCL skips docker* for the same reason).
bool isLocalBridge(std::string_view name) {
  return name.starts_with("docker") || name.starts_with("veth") || name.starts_with("virbr") || name.starts_with("br-");
}

// 0 ordinary, 1 container/VM bridge, 2 loopback: the default skips the higher tiers while a lower one exists.
int tier(const Interface& i) { return i.loopback ? 2 : isLocalBridge(i.name) ? 1 : 0; }

// IPv4 first: every cluster network routes it, while IPv6 is often configured on one side only. Link-local last:
// it reaches one link, and an IPv6 one needs a scope that names this host's interface.
int addressRank(const Interface& i) { return (i.linkLocal() ? 2 : 0) + (i.family == AF_INET ? 0 : 1); }

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(" \t") - b + 1));
}

std::string numericAddress(const sockaddr* sa) {
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw = sa->sa_family == AF_INET
                        ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(sa)->sin_addr)
                        : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  return ::inet_ntop(sa->sa_family, raw, text, sizeof text) ? std::string(text) : std::string();
}

}  // namespace

bool Interface::linkLocal() const {
  if (family == AF_INET) {
    in_addr a{};
    return ::inet_pton(AF_INET, address.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 16) == 0xA9FE;  // 169.254/16
  }
  if (family == AF_INET6) {
    in6_addr a{};
    return ::inet_pton(AF_INET6, address.c_str(), &a) == 1 && IN6_IS_ADDR_LINKLOCAL(&a);
  }
  return false;
}

std::string Interface::hostForPeers() const {
  return family == AF_INET6 && linkLocal() ? address + "%" + name : address;
}

std::string Interface::describe() const {
  std::string flags;
  if (family == AF_UNSPEC) flags = "no address";
  if (!up) flags += flags.empty() ? "down" : ", down";
  if (loopback) flags += flags.empty() ? "loopback" : ", loopback";
  std::string out = name;
  if (!address.empty()) out += " " + address;
  if (!flags.empty()) out += " (" + flags + ")";
  return out;
}

InterfaceSpec InterfaceSpec::parse(std::string_view text) {
  InterfaceSpec spec;
  std::string_view rest = text;
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  if (!rest.empty() && rest.front() == '^') {
    spec.exclude = true;
    rest.remove_prefix(1);
  }
  if (!rest.empty() && rest.front() == '=') {
    spec.exact = true;
    rest.remove_prefix(1);
  }
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string name = trim(rest.substr(0, comma));
    if (!name.empty()) spec.names.push_back(std::move(name));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return spec;
}

bool InterfaceSpec::admits(std::string_view name) const {
  if (names.empty()) return true;
  const bool listed = std::any_of(names.begin(), names.end(),
                                  [&](const std::string& n) { return exact ? name == n : name.starts_with(n); });
  return listed != exclude;
}

std::vector<Interface> listInterfaces() {
  ifaddrs* raw = nullptr;
  if (::getifaddrs(&raw) != 0) failErrno("getifaddrs", errno);
  const std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> list(raw, ::freeifaddrs);
  std::vector<Interface> out;
  std::vector<Interface> bare;  // interfaces seen without an IP address (AF_PACKET entries only)
  for (const ifaddrs* ifa = list.get(); ifa != nullptr; ifa = ifa->ifa_next) {
    Interface i;
    i.name = ifa->ifa_name;
    i.up = (ifa->ifa_flags & IFF_UP) != 0;
    i.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    const int family = ifa->ifa_addr ? ifa->ifa_addr->sa_family : AF_UNSPEC;
    if (family == AF_INET || family == AF_INET6) {
      i.family = family;
      i.address = numericAddress(ifa->ifa_addr);
      if (!i.address.empty()) out.push_back(std::move(i));
    } else {
      i.family = AF_UNSPEC;
      bare.push_back(std::move(i));
    }
  }
  std::set<std::string> withAddress;
  for (const auto& i : out) withAddress.insert(i.name);
  for (auto& i : bare) {
    if (withAddress.insert(i.name).second) out.push_back(std::move(i));
  }
  return out;
}

std::vector<Interface> selectInterfaces(const std::vector<Interface>& all, std::string_view specText) {
  const InterfaceSpec spec = InterfaceSpec::parse(specText);
  std::vector<Interface> chosen;
  for (const auto& i : all) {
    if (i.up && (i.family == AF_INET || i.family == AF_INET6) && spec.admits(i.name)) chosen.push_back(i);
  }
  // Interfaces the user named are taken as named; otherwise loopback and bridges are a fallback only.
  if (spec.exclude || spec.names.empty()) {
    const bool anyOrdinary = std::any_of(chosen.begin(), chosen.end(), [](const Interface& i) { return tier(i) == 0; });
    if (anyOrdinary) std::erase_if(chosen, [](const Interface& i) { return tier(i) != 0; });
  }
  std::stable_sort(chosen.begin(), chosen.end(), [](const Interface& a, const Interface& b) {
    return std::pair(tier(a), addressRank(a)) < std::pair(tier(b), addressRank(b));
  });
  if (chosen.empty()) {
    std::string present;
    for (const auto& i : all) present += (present.empty() ? "" : ", ") + i.describe();
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_IFNAME='", specText,
         "' selects no network interface that is up and has an IP address; this host has: ",
         present.empty() ? std::string("no interfaces") : present);
  }
  return chosen;
}

std::vector<Interface> railInterfaces(const std::vector<Interface>& all, std::string_view specText) {
  std::vector<Interface> chosen = selectInterfaces(all, specText);
  const InterfaceSpec spec = InterfaceSpec::parse(specText);
  if (spec.exclude || spec.names.empty()) return {chosen.front()};
  const Interface first = chosen.front();
  std::vector<Interface> rails;
  for (const auto& i : chosen) {
    const bool named = std::any_of(rails.begin(), rails.end(), [&](const Interface& r) { return r.name == i.name; });
    if (!named && i.family == first.family && i.linkLocal() == first.linkLocal()) rails.push_back(i);
  }
  return rails;
}

}  // namespace braid::tcp
