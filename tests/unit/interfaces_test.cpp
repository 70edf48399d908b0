// BRAID_IFNAME's interface choice from fixtures, and host identity across network namespaces.
#include "transport/tcp/interfaces.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include "base/config.hpp"
#include "base/error.hpp"
#include "transport/host_identity.hpp"
#include "transport/tcp/socket.hpp"

namespace braid::tcp {
namespace {

Interface v4(std::string name, std::string address, bool up = true) {
  return {.name = std::move(name), .family = AF_INET, .address = std::move(address), .up = up};
}
Interface v6(std::string name, std::string address) {
  return {.name = std::move(name), .family = AF_INET6, .address = std::move(address), .up = true};
}
Interface lo4() { return {.name = "lo", .family = AF_INET, .address = "127.0.0.1", .up = true, .loopback = true}; }
Interface lo6() { return {.name = "lo", .family = AF_INET6, .address = "::1", .up = true, .loopback = true}; }
Interface bare(std::string name, bool up) {
  return {.name = std::move(name), .family = AF_UNSPEC, .address = "", .up = up};
}

// "name address" of each chosen record, best first: compact to compare.
std::vector<std::string> chosen(const std::vector<Interface>& all, std::string_view spec) {
  std::vector<std::string> out;
  for (const auto& i : selectInterfaces(all, spec)) out.push_back(i.name + " " + i.address);
  return out;
}

using Names = std::vector<std::string>;

TEST(InterfaceSpec, ParsesPrefixesExcludeAndExact) {
  const auto plain = InterfaceSpec::parse(" eth , ,ib0 ");
  EXPECT_EQ(plain.names, (Names{"eth", "ib0"}));
  EXPECT_FALSE(plain.exclude);
  EXPECT_FALSE(plain.exact);
  const auto both = InterfaceSpec::parse("^=docker0,lo");
  EXPECT_EQ(both.names, (Names{"docker0", "lo"}));
  EXPECT_TRUE(both.exclude);
  EXPECT_TRUE(both.exact);
  EXPECT_TRUE(InterfaceSpec::parse("=eth0").exact);
  EXPECT_FALSE(InterfaceSpec::parse("=eth0").exclude);
  // No names admits everything: "^" alone excludes nothing.
  EXPECT_TRUE(InterfaceSpec::parse("").admits("anything"));
  EXPECT_TRUE(InterfaceSpec::parse("^").admits("eth0"));
}

TEST(InterfaceSpec, PrefixAgainstExactMatch) {
  EXPECT_TRUE(InterfaceSpec::parse("eth").admits("eth10"));
  EXPECT_TRUE(InterfaceSpec::parse("eth1").admits("eth10"));
  EXPECT_FALSE(InterfaceSpec::parse("=eth1").admits("eth10"));
  EXPECT_TRUE(InterfaceSpec::parse("=eth1").admits("eth1"));
  EXPECT_FALSE(InterfaceSpec::parse("^eth").admits("eth0"));
  EXPECT_TRUE(InterfaceSpec::parse("^=eth1").admits("eth10"));
}

TEST(SelectInterfaces, DefaultSkipsLoopbackAndBridges) {
  const std::vector<Interface> all = {lo4(),
                                      v4("docker0", "172.17.0.1"),
                                      v4("veth12ab", "169.254.3.3"),
                                      v4("virbr0", "192.168.122.1"),
                                      v4("br-5f2e", "172.18.0.1"),
                                      v4("eth0", "10.0.0.5"),
                                      lo6()};
  EXPECT_EQ(chosen(all, ""), (Names{"eth0 10.0.0.5"}));
}

TEST(SelectInterfaces, DefaultFallsBackToBridgesThenLoopback) {
  EXPECT_EQ(chosen({lo4(), v4("docker0", "172.17.0.1"), lo6()}, ""),
            (Names{"docker0 172.17.0.1", "lo 127.0.0.1", "lo ::1"}));
  EXPECT_EQ(chosen({lo6(), lo4()}, ""), (Names{"lo 127.0.0.1", "lo ::1"}));
  // A down interface is no alternative to loopback.
  EXPECT_EQ(chosen({v4("eth0", "10.0.0.5", /*up=*/false), lo4()}, ""), (Names{"lo 127.0.0.1"}));
}

TEST(SelectInterfaces, Ipv4BeforeIpv6AndLinkLocalLast) {
  const std::vector<Interface> all = {v6("eth0", "fe80::1"), v6("eth0", "2001:db8::5"), v4("eth1", "169.254.7.7"),
                                      v4("eth0", "10.0.0.5")};
  EXPECT_EQ(chosen(all, ""), (Names{"eth0 10.0.0.5", "eth0 2001:db8::5", "eth1 169.254.7.7", "eth0 fe80::1"}));
  // An IPv6 link-local address is dialled with its scope.
  EXPECT_EQ(v6("eth0", "fe80::1").hostForPeers(), "fe80::1%eth0");
  EXPECT_EQ(v6("eth0", "2001:db8::5").hostForPeers(), "2001:db8::5");
  EXPECT_EQ(v4("eth1", "169.254.7.7").hostForPeers(), "169.254.7.7");
}

TEST(SelectInterfaces, IncludeTakesNamedInterfacesEvenLoopbackAndBridges) {
  const std::vector<Interface> all = {lo4(), v4("eth0", "10.0.0.5"), v4("eth10", "10.1.0.5"), v4("ib0", "10.2.0.5"),
                                      v4("docker0", "172.17.0.1")};
  EXPECT_EQ(chosen(all, "eth"), (Names{"eth0 10.0.0.5", "eth10 10.1.0.5"}));
  EXPECT_EQ(chosen(all, "ib,eth1"), (Names{"eth10 10.1.0.5", "ib0 10.2.0.5"}));  // this host's order, not the list's
  EXPECT_EQ(chosen(all, "lo"), (Names{"lo 127.0.0.1"}));
  EXPECT_EQ(chosen(all, "docker,ib"), (Names{"ib0 10.2.0.5", "docker0 172.17.0.1"}));
  EXPECT_THROW(chosen(all, "=eth1"), Error);  // exact: eth10 does not count as eth1
  EXPECT_EQ(chosen(all, "=eth10"), (Names{"eth10 10.1.0.5"}));
}

TEST(SelectInterfaces, ExcludeKeepsTheDefaultSkipping) {
  const std::vector<Interface> all = {lo4(), v4("ib0", "10.2.0.5"), v4("docker0", "172.17.0.1"), v4("eth0", "10.0.0.5"),
                                      v4("eth1", "10.0.1.5")};
  EXPECT_EQ(chosen(all, "^ib"), (Names{"eth0 10.0.0.5", "eth1 10.0.1.5"}));
  EXPECT_EQ(chosen(all, "^=eth0"), (Names{"ib0 10.2.0.5", "eth1 10.0.1.5"}));
  // Excluding every ordinary interface falls back to the bridge, then loopback.
  EXPECT_EQ(chosen(all, "^eth,ib"), (Names{"docker0 172.17.0.1", "lo 127.0.0.1"}));
  EXPECT_EQ(chosen(all, "^eth,ib,docker"), (Names{"lo 127.0.0.1"}));
}

TEST(SelectInterfaces, EmptySelectionNamesTheSpecAndEveryInterface) {
  const std::vector<Interface> all = {lo4(), v4("eth0", "10.0.0.5"), bare("eth1", /*up=*/false),
                                      v4("eth2", "10.0.2.5", /*up=*/false)};
  for (const std::string spec : {"=eth9", "eth1", "eth2", "^eth,lo"}) {
    try {
      selectInterfaces(all, spec);
      ADD_FAILURE() << spec << ": expected InvalidArgument";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      const std::string m = e.message();
      EXPECT_NE(m.find("BRAID_IFNAME='" + spec + "'"), std::string::npos) << m;
      EXPECT_NE(m.find("lo 127.0.0.1 (loopback)"), std::string::npos) << m;
      EXPECT_NE(m.find("eth0 10.0.0.5"), std::string::npos) << m;
      EXPECT_NE(m.find("eth1 (no address, down)"), std::string::npos) << m;
      EXPECT_NE(m.find("eth2 10.0.2.5 (down)"), std::string::npos) << m;
    }
  }
  try {
    selectInterfaces({}, "");
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("no interfaces"), std::string::npos) << e.what();
  }
}

// Rails: several only where the user named several interfaces; each gives its best address, of one family.
TEST(RailInterfaces, SeveralOnlyForAnIncludeListAdmittingSeveral) {
  const std::vector<Interface> all = {lo4(),
                                      v4("eth0", "10.0.1.5"),
                                      v6("eth0", "fd00::5"),
                                      v4("eth1", "10.0.2.5"),
                                      v6("eth1", "fe80::2"),
                                      v4("docker0", "172.17.0.1")};
  auto rails = [&](std::string_view spec) {
    std::vector<std::string> out;
    for (const auto& i : railInterfaces(all, spec)) out.push_back(i.name + " " + i.address);
    return out;
  };
  EXPECT_EQ(rails(""), (Names{"eth0 10.0.1.5"}));         // default: the single best
  EXPECT_EQ(rails("^docker"), (Names{"eth0 10.0.1.5"}));  // exclude lists too
  EXPECT_EQ(rails("eth"), (Names{"eth0 10.0.1.5", "eth1 10.0.2.5"}));
  EXPECT_EQ(rails("=eth1,eth0"), (Names{"eth0 10.0.1.5", "eth1 10.0.2.5"}));  // selectInterfaces' order
  EXPECT_EQ(rails("=eth1"), (Names{"eth1 10.0.2.5"}));
  // eth1 has no IPv6 address of eth0's kind (only link-local): an IPv6-only choice keeps one rail.
  const std::vector<Interface> v6only = {v6("eth0", "fd00::5"), v6("eth1", "fe80::2")};
  EXPECT_EQ(railInterfaces(v6only, "eth").size(), 1u);
  EXPECT_THROW(railInterfaces(all, "=ib0"), Error);
}

TEST(SelectInterfaces, ThisHostAndTheKnob) {
  const auto all = listInterfaces();
  ASSERT_FALSE(all.empty());
  const bool loUp = std::any_of(all.begin(), all.end(), [](const Interface& i) { return i == lo4(); });
  if (loUp) {
    EXPECT_EQ(hostAddressForPeers("=lo"), "127.0.0.1");
  }
  EXPECT_THROW(hostAddressForPeers("=braid-no-such-interface"), Error);
  const Settings s = Settings::fromEnvironment([](const std::string& name) -> std::optional<std::string> {
    if (name == "BRAID_IFNAME") return "^=docker0";
    return std::nullopt;
  });
  EXPECT_EQ(s.ifname, "^=docker0");
  EXPECT_EQ(Settings::fromEnvironment([](const std::string&) { return std::nullopt; }).ifname, "");
}

// ---- host identity ----

std::string bootIdOf(const std::string& identity) { return identity.substr(0, identity.find('/')); }

TEST(HostIdentity, BootIdAndNetworkNamespace) {
  const std::string id = transport::hostIdentity();
  EXPECT_EQ(id, transport::hostIdentity());
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string bootId;
  if (std::getline(in, bootId)) {
    EXPECT_EQ(bootIdOf(id), bootId) << id;
  }
  char link[128] = {};
  if (::readlink("/proc/self/ns/net", link, sizeof link - 1) > 0) {
    EXPECT_EQ(id.substr(id.find('/') + 1), link) << id;
  }
}

// Deletes the namespace whatever happens to the test.
struct NetnsGuard {
  std::string name;
  ~NetnsGuard() { std::system(("ip netns delete " + name + " >/dev/null 2>&1").c_str()); }
};

// The identity a child process reports from inside namespace `name`, or "" when it could not enter it.
std::string identityInside(const std::string& name) {
  int fds[2];
  if (::pipe(fds) != 0) return "";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const int ns = ::open(("/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0) ::_exit(1);
    const std::string id = transport::hostIdentity();
    const bool ok = ::write(fds[1], id.data(), id.size()) == static_cast<ssize_t>(id.size());
    ::_exit(ok ? 0 : 1);
  }
  ::close(fds[1]);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return "";
  return out;
}

TEST(HostIdentity, DiffersBetweenNetworkNamespaces) {
  if (::geteuid() != 0) GTEST_SKIP() << "creating a network namespace needs root";
  if (std::system("ip netns list >/dev/null 2>&1") != 0) GTEST_SKIP() << "the ip command (iproute2) is unavailable";
  NetnsGuard ns{"braid-unit-" + std::to_string(::getpid())};
  if (std::system(("ip netns add " + ns.name + " 2>/dev/null").c_str()) != 0) {
    GTEST_SKIP() << "ip netns add " << ns.name << " failed: network namespaces are unavailable here";
  }
  const std::string here = transport::hostIdentity();
  const std::string there = identityInside(ns.name);
  ASSERT_FALSE(there.empty()) << "the child could not enter namespace " << ns.name;
  EXPECT_NE(here, there);
  // One kernel: the boot id is the same, only the namespace part tells the two "hosts" apart.
  EXPECT_EQ(bootIdOf(here), bootIdOf(there)) << here << " vs " << there;
}

}  // namespace
}  // namespace braid::tcp
