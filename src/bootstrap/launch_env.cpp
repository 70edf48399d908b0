#include "bootstrap/launch_env.hpp"

#include <charconv>

#include "base/error.hpp"

namespace braid::bootstrap {

namespace {

int parseInt(const std::string& text, const char* name, int minimum) {
  if (text.empty()) {
    fail(ErrorCode::kInvalidArgument, {}, name, " is not set; start the job with `braid run`, or set BRAID_RANK, ",
         "BRAID_WORLD_SIZE and BRAID_ROOT_ADDR");
  }
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < minimum) {
    fail(ErrorCode::kInvalidArgument, {}, name, "='", text, "' is not an integer >= ", minimum);
  }
  return value;
}

}  // namespace

LaunchIdentity readLaunchIdentity(const Settings& settings) {
  LaunchIdentity id;
  id.size = parseInt(settings.worldSize, "BRAID_WORLD_SIZE", 1);
  id.rank = parseInt(settings.rank, "BRAID_RANK", 0);
  if (id.rank >= id.size) {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_RANK=", id.rank, " is not below BRAID_WORLD_SIZE=", id.size);
  }
  if (!settings.localRank.empty()) id.localRank = parseInt(settings.localRank, "BRAID_LOCAL_RANK", 0);
  if (settings.rootAddr.empty()) {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_ROOT_ADDR is not set (HOST:PORT where rank 0 listens)");
  }
  id.root = tcp::Address::parse(settings.rootAddr);
  id.token = settings.token;
  return id;
}

}  // namespace braid::bootstrap
