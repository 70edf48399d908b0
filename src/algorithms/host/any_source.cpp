#include "algorithms/host/any_source.hpp"

namespace braid::host {

void checkAnySourcePeers(int rank, int size, int tag, const CallContext& context,
                         const std::function<std::string(int)>& failure, const std::function<bool(int)>& left,
                         const std::function<bool()>& arrived) {
  int gone = 0;
  int last = -1;
  std::string lastWhy;
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    std::string why = failure(p);
    if (why.empty()) continue;
    ErrorContext ctx = context;
    ctx.peer = p;
    if (!left(p)) {
      if (arrived()) return;
      fail(ErrorCode::kPeerLost, ctx, why, " while a receive from any source (tag ", tag,
           ") waited: its message may have been that peer's");
    }
    ++gone;
    last = p;
    lastWhy = std::move(why);
  }
  // A rank alone may still send itself the message (a later call joins the receive).
  if (size > 1 && gone == size - 1 && !arrived()) {
    ErrorContext ctx = context;
    ctx.peer = last;
    fail(ErrorCode::kPeerLost, ctx, "every peer left (the last: ", lastWhy, ") while a receive from any source (tag ",
         tag, ") waited: no rank is left to send it");
  }
}

}  // namespace braid::host
