#include "core/arguments.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "base/data_type.hpp"
#include "base/error.hpp"
#include "core/memory_kind.hpp"

namespace braid::core {

namespace detail {

void failType(DataType type, const CallContext& ctx) {
  fail(ErrorCode::kInvalidArgument, ctx, "invalid data type value ", static_cast<int>(type));
}

void failCount(std::size_t count, DataType type, const char* name, const CallContext& ctx) {
  fail(ErrorCode::kInvalidArgument, ctx, name, ": count ", count, " of ", dataTypeName(type),
       " is larger than any buffer can be (a negative count?)");
}

void failNull(std::size_t count, const char* name, const CallContext& ctx) {
  fail(ErrorCode::kInvalidArgument, ctx, name, " is null but count is ", count);
}

void failOverlap(const void* send, std::size_t sendBytes, const void* recv, std::size_t recvBytes, const char* form,
                 const CallContext& ctx) {
  fail(ErrorCode::kInvalidArgument, ctx, "send buffer (", sendBytes, " bytes at ", send, ") overlaps recv buffer (",
       recvBytes, " bytes at ", recv, ") without being in place (", form,
       "): the call would read what it had already written");
}

}  // namespace detail

void checkRank(int value, int size, const char* name, const CallContext& ctx) {
  if (value < 0 || value >= size) {
    fail(ErrorCode::kInvalidArgument, ctx, name, " ", value, " is out of range for ", size, " ranks");
  }
}

void checkPerRank(const std::vector<std::size_t>& values, int size, const char* name, const CallContext& ctx) {
  if (values.size() != static_cast<std::size_t>(size)) {
    fail(ErrorCode::kInvalidArgument, ctx, name, " has ", values.size(), " entries, expected one per rank (", size,
         ")");
  }
}

std::size_t extentOf(const std::vector<std::size_t>& counts, const std::vector<std::size_t>& displs, const char* name,
                     const CallContext& ctx) {
  std::size_t extent = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (displs[i] > std::numeric_limits<std::size_t>::max() - counts[i]) {
      fail(ErrorCode::kInvalidArgument, ctx, name, "[", i, "]: displacement ", displs[i], " + count ", counts[i],
           " overflows");
    }
    if (displs[i] + counts[i] > extent) extent = displs[i] + counts[i];
  }
  return extent;
}

void checkDisjoint(const std::vector<std::size_t>& counts, const std::vector<std::size_t>& displs, const char* name,
                   const CallContext& ctx) {
  std::vector<std::size_t> order;  // the ranks with a block, by where it starts
  order.reserve(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return displs[a] < displs[b]; });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const std::size_t a = order[k - 1], b = order[k];
    if (displs[a] + counts[a] > displs[b]) {  // extentOf checked that the sums do not overflow
      fail(ErrorCode::kInvalidArgument, ctx, name, ": the blocks of ranks ", a, " and ", b, " overlap ([", displs[a],
           ", ", displs[a] + counts[a], ") and [", displs[b], ", ", displs[b] + counts[b],
           ")): each element may be written once");
    }
  }
}

const void* blockAt(const void* buffer, std::size_t index, std::size_t blockBytes) {
  return buffer == nullptr ? nullptr : static_cast<const std::byte*>(buffer) + index * blockBytes;
}

std::size_t times(std::size_t count, std::size_t factor, const char* name, const CallContext& ctx) {
  if (factor != 0 && count > std::numeric_limits<std::size_t>::max() / factor) {
    fail(ErrorCode::kInvalidArgument, ctx, name, ": ", count, " x ", factor, " elements overflows");
  }
  return count * factor;
}

}  // namespace braid::core
