// Passing descriptors between the ranks of one host (transport/cuda_ipc/fd_mailbox): what a rank receives is the
// same open file its peer sent, tagged with the sender; a message without the group's nonce is refused; a wait is
// bounded.
#include "transport/cuda_ipc/fd_mailbox.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>

#include "base/error.hpp"

namespace braid::transport {
namespace {

std::uint64_t freshNonce() { return std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32); }

TEST(FdMailbox, ADescriptorArrivesAsTheSameOpenFileTaggedWithItsSender) {
  const std::uint64_t nonce = freshNonce();
  FdMailbox zero(nonce, 0), one(nonce, 1);
  int pipeFds[2];
  ASSERT_EQ(::pipe(pipeFds), 0);
  one.send(0, pipeFds[1], 12345);
  const FdMailbox::Letter letter = zero.receive(5);
  EXPECT_EQ(letter.from, 1);
  EXPECT_EQ(letter.value, 12345u);
  ASSERT_GE(letter.fd, 0);
  EXPECT_NE(letter.fd, pipeFds[1]);  // a new descriptor of the same pipe
  ASSERT_EQ(::write(letter.fd, "hi", 2), 2);
  char got[3] = {};
  ASSERT_EQ(::read(pipeFds[0], got, 2), 2);
  EXPECT_STREQ(got, "hi");
  for (int fd : {letter.fd, pipeFds[0], pipeFds[1]}) ::close(fd);
}

// Names carry the group's nonce: a sender of another group (another nonce) reaches nobody here, and sending to a
// rank that has no mailbox fails naming it instead of vanishing.
TEST(FdMailbox, GroupsDoNotSeeEachOtherAndAnAbsentRankIsAnError) {
  const std::uint64_t nonce = freshNonce();
  FdMailbox mine(nonce, 0);
  FdMailbox otherGroup(nonce + 1, 1);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  try {
    otherGroup.send(0, fds[1], 1);  // rank 0 of the other group does not exist
    FAIL() << "a letter to a mailbox nobody bound was sent";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
    EXPECT_EQ(e.context().peer, 0) << e.what();
  }
  EXPECT_THROW(mine.receive(0.1), Error);  // and nothing arrived here
  for (int fd : fds) ::close(fd);
}

TEST(FdMailbox, WaitingForNothingEndsWithTimeout) {
  FdMailbox lonely(freshNonce(), 3);
  const auto start = std::chrono::steady_clock::now();
  try {
    lonely.receive(0.2);
    FAIL() << "receive returned without a letter";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(FdMailbox, ANameAlreadyBoundIsUnavailable) {
  const std::uint64_t nonce = freshNonce();
  FdMailbox first(nonce, 0);
  try {
    FdMailbox second(nonce, 0);
    FAIL() << "two mailboxes bound one name";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
  }
}

}  // namespace
}  // namespace braid::transport
