#include "algorithms/device/fd_trade.hpp"

#include <array>

#include "algorithms/device/step_exchange.hpp"
#include "base/error.hpp"

namespace braid::device {

namespace {

struct Ready {
  std::uint32_t ok;
  std::array<char, 160> why;
};

}  // namespace

bool FdTrade::open(Engine& host, int rank, std::vector<int> pids, std::vector<bool> offersFd, std::uint64_t nonce,
                   const OpEnv& env, std::string* why) {
  rank_ = rank;
  pids_ = std::move(pids);
  offersFd_ = std::move(offersFd);
  const int size = static_cast<int>(pids_.size());
  fds_.assign(pids_.size(), -1);
  // The same answer on every rank: whether any fd crosses a process boundary (then every rank opens a mailbox, and
  // the exchange after it is one every rank makes).
  bool travel = false;
  for (int p = 0; p < size; ++p) {
    for (int q = 0; q < size; ++q)
      travel |= offers(p) && pids_[static_cast<std::size_t>(p)] != pids_[static_cast<std::size_t>(q)];
  }
  why->clear();
  if (!travel) return true;
  Ready ready{};
  ready.ok = 1;
  try {
    mailbox_ = std::make_unique<transport::FdMailbox>(nonce, rank);
  } catch (const Error& e) {
    failStep(ready, e.message());
  }
  exchangeSteps(host, ready, size, env, why);  // every mailbox is bound before anyone sends
  return why->empty();
}

void FdTrade::trade(int fd, std::uint64_t value, const OpEnv& env) {
  const int size = static_cast<int>(pids_.size());
  int letters = 0;
  for (int p = 0; p < size; ++p) {
    if (p == rank_ || !remote(p)) continue;
    if (offers(rank_)) mailbox_->send(p, fd, value);
    if (offers(p)) ++letters;
  }
  for (int i = 0; i < letters; ++i) {
    const transport::FdMailbox::Letter letter = mailbox_->receive(env.timeoutSeconds);
    received_.emplace_back(letter.fd);
    if (letter.from < 0 || letter.from >= size || !remote(letter.from) || !offers(letter.from)) {
      fail(ErrorCode::kInternal, env.context, "a GPU memory fd from unexpected rank ", letter.from);
    }
    fds_[static_cast<std::size_t>(letter.from)] = letter.fd;
  }
}

int FdTrade::fdOf(int p, int localFd) const {
  if (!offers(p)) return -1;
  return remote(p) ? fds_[static_cast<std::size_t>(p)] : localFd;
}

}  // namespace braid::device
