#include "base/error.hpp"

#include <cstring>

namespace braid {

namespace {

std::string describe(ErrorCode code, const std::string& message, const ErrorContext& c) {
  std::ostringstream out;
  out << "braid " << errorCodeName(code);
  std::string where;
  auto add = [&where](const std::string& part) { where += (where.empty() ? "" : ", ") + part; };
  if (c.rank >= 0) add(strCat("rank ", c.rank));
  if (c.peer >= 0) add(strCat("peer ", c.peer));
  if (!c.op.empty()) add(c.seq >= 0 ? strCat(c.op, " #", c.seq) : c.op);
  if (!where.empty()) out << " [" << where << "]";
  out << ": " << message;
  return out.str();
}

}  // namespace

Error::Error(ErrorCode code, const std::string& message, ErrorContext context)
    : std::runtime_error(describe(code, message, context)),
      code_(code),
      context_(std::move(context)),
      message_(message) {}

const char* errorCodeName(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case ErrorCode::kTimeout:
      return "Timeout";
    case ErrorCode::kPeerLost:
      return "PeerLost";
    case ErrorCode::kMismatch:
      return "Mismatch";
    case ErrorCode::kAborted:
      return "Aborted";
    case ErrorCode::kUnavailable:
      return "Unavailable";
    case ErrorCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

void failErrno(const std::string& what, int err) {
  char buf[256];
  // GNU strerror_r returns the message pointer, which may or may not be buf.
  const char* text = strerror_r(err, buf, sizeof buf);
  fail(ErrorCode::kInternal, {}, what, ": ", text);
}

}  // namespace braid
