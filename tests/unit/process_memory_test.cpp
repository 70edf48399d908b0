// Reading another process's memory in one copy (transport/process_memory.hpp): a forked child's buffer is read as
// the child holds it, not as the parent does; ranges the child has not mapped and processes of another pid namespace
// are refused with a reason rather than read.
#include "transport/process_memory.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace braid::transport {
namespace {

std::vector<std::uint32_t> counting(std::size_t n, std::uint32_t from) {
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = from + static_cast<std::uint32_t>(i);
  return v;
}

TEST(ProcessMemory, ReadsThisProcessByCopying) {
  const std::vector<std::uint32_t> mine = counting(1000, 5);
  std::vector<std::uint32_t> got(mine.size(), 0);
  std::string why;
  ASSERT_TRUE(readProcessMemory(thisProcess(), reinterpret_cast<std::uintptr_t>(mine.data()), got.data(),
                                got.size() * sizeof(std::uint32_t), &why))
      << why;
  EXPECT_EQ(got, mine);
}

TEST(ProcessMemory, ReadsAChildsBufferAsTheChildHoldsIt) {
  // 8 MiB: more than one page run, so that the kernel's copy goes through several of its batches.
  std::vector<std::uint32_t> buffer = counting(2 << 20, 1);
  int ready[2];
  int done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child's copy of the buffer (same address) gets other contents; the parent's keeps its own.
    for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = 7 * static_cast<std::uint32_t>(i);
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    (void)!::read(done[0], &c, 1);  // stays until the parent has read
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ProcessIdentity owner = thisProcess();
  owner.pid = static_cast<std::int32_t>(child);
  std::vector<std::uint32_t> got(buffer.size(), 0);
  std::string why;
  const bool read = readProcessMemory(owner, reinterpret_cast<std::uintptr_t>(buffer.data()), got.data(),
                                      got.size() * sizeof(std::uint32_t), &why);
  std::vector<std::byte> scratch(64);
  std::string unmapped;
  const bool readUnmapped = readProcessMemory(owner, 4096, scratch.data(), scratch.size(), &unmapped);
  ProcessIdentity elsewhere = owner;
  elsewhere.pidNamespace += 1;
  std::string other;
  const bool readOther = readProcessMemory(elsewhere, reinterpret_cast<std::uintptr_t>(buffer.data()), scratch.data(),
                                           scratch.size(), &other);
  (void)!::write(done[1], &c, 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  ::close(done[0]);
  ::close(done[1]);
  // Where the kernel forbids it (a container's seccomp profile, ptrace rules), the refusal says why; nothing else.
  if (!read) GTEST_SKIP() << "this machine refuses cross-memory attach: " << why;
  EXPECT_EQ(got[0], 0u);
  EXPECT_EQ(got[12345], 7u * 12345u);
  EXPECT_EQ(got.back(), 7u * static_cast<std::uint32_t>(got.size() - 1));
  EXPECT_FALSE(readUnmapped);
  EXPECT_NE(unmapped.find("process_vm_readv"), std::string::npos) << unmapped;
  EXPECT_FALSE(readOther);
  EXPECT_NE(other.find("pid namespace"), std::string::npos) << other;
}

}  // namespace
}  // namespace braid::transport
