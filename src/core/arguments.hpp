// Argument checks of the public calls. Each throws InvalidArgument naming the call, the argument and its value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "base/data_type.hpp"
#include "base/error.hpp"
#include "braid/types.hpp"

namespace braid::core {

// The checks every call makes are inline and branch once to an out-of-line failure that builds the message: a
// small call makes several, and the calls and their frames cost more than the tests.
namespace detail {
[[noreturn, gnu::cold]] void failType(DataType type, const CallContext& ctx);
[[noreturn, gnu::cold]] void failCount(std::size_t count, DataType type, const char* name, const CallContext& ctx);
[[noreturn, gnu::cold]] void failNull(std::size_t count, const char* name, const CallContext& ctx);
[[noreturn, gnu::cold]] void failOverlap(const void* send, std::size_t sendBytes, const void* recv,
                                         std::size_t recvBytes, const char* form, const CallContext& ctx);
}  // namespace detail

inline void checkType(DataType type, const CallContext& ctx) {
  if (!isValid(type)) [[unlikely]]
    detail::failType(type, ctx);
}
/// InvalidArgument unless `count` elements of `type` fit one object (PTRDIFF_MAX bytes, what no buffer can pass):
/// checkBuffer's size half, for a buffer only another rank holds (the root's), so that every rank fails alike.
inline void checkCount(std::size_t count, DataType type, const char* name, const CallContext& ctx) {
  // A negative int passed as a count reads as nearly 2^64: no buffer is that large, whatever the element's size.
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, dataTypeSize(type), &bytes) ||
      bytes > static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max())) [[unlikely]]
    detail::failCount(count, type, name, ctx);
}
/// Null pointer with a non-zero count, or more elements than any buffer can hold (checkCount).
inline void checkBuffer(const void* ptr, std::size_t count, DataType type, const char* name, const CallContext& ctx) {
  checkCount(count, type, name, ctx);
  if (ptr == nullptr && count != 0) [[unlikely]]
    detail::failNull(count, name, ctx);
}
void checkRank(int value, int size, const char* name, const CallContext& ctx);
/// InvalidArgument unless the blocks [displs[i], displs[i] + counts[i]) are disjoint (empty ones aside): each element
/// of a receive buffer is written once (MPI calls other layouts erroneous; transports would differ in the result).
void checkDisjoint(const std::vector<std::size_t>& counts, const std::vector<std::size_t>& displs, const char* name,
                   const CallContext& ctx);
/// `values` must have one entry per rank.
void checkPerRank(const std::vector<std::size_t>& values, int size, const char* name, const CallContext& ctx);
/// Largest displs[i] + counts[i]: the elements a buffer laid out this way spans (overflow-checked).
std::size_t extentOf(const std::vector<std::size_t>& counts, const std::vector<std::size_t>& displs, const char* name,
                     const CallContext& ctx);
/// A call's send and receive ranges (bytes) must not overlap, unless send lies where the call's in-place form puts
/// it (`inPlace`: the caller's verdict, `form` its rule for the message): any other overlap reads what the call
/// has already written, so the result would depend on the algorithm chosen. Empty or null ranges never overlap.
inline void checkOverlap(const void* send, std::size_t sendBytes, const void* recv, std::size_t recvBytes, bool inPlace,
                         const char* form, const CallContext& ctx) {
  if (inPlace || send == nullptr || recv == nullptr || sendBytes == 0 || recvBytes == 0) return;
  const auto s = reinterpret_cast<std::uintptr_t>(send);
  const auto r = reinterpret_cast<std::uintptr_t>(recv);
  // Unsigned: each holds only where that start lies in the other.
  if (s - r < recvBytes || r - s < sendBytes) [[unlikely]]
    detail::failOverlap(send, sendBytes, recv, recvBytes, form, ctx);
}
/// Where block `index` of `blockBytes` each starts in `buffer` (null stays null): the address an in-place form
/// gives the other side (allgather's send at recv's block `rank`, reduce_scatter's recv at send's).
const void* blockAt(const void* buffer, std::size_t index, std::size_t blockBytes);
/// count * factor elements, overflow-checked.
std::size_t times(std::size_t count, std::size_t factor, const char* name, const CallContext& ctx);

}  // namespace braid::core
