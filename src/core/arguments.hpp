// Argument checks of the public calls. Each throws InvalidArgument naming the call, the argument and its value.
#pragma once

#include <cstddef>
#include <vector>

#include "braid/types.hpp"

namespace braid::core {

void checkType(DataType type, const ErrorContext& ctx);
/// Null pointer with a non-zero count, or more elements than any buffer can hold (checkCount).
void checkBuffer(const void* ptr, std::size_t count, DataType type, const char* name, const ErrorContext& ctx);
/// InvalidArgument unless `count` elements of `type` fit one object (PTRDIFF_MAX bytes, what no buffer can pass):
/// checkBuffer's size half, for a buffer only another rank holds (the root's), so that every rank fails alike.
void checkCount(std::size_t count, DataType type, const char* name, const ErrorContext& ctx);
void checkRank(int value, int size, const char* name, const ErrorContext& ctx);
/// InvalidArgument unless the blocks [displs[i], displs[i] + counts[i]) are disjoint (empty ones aside): each element
/// of a receive buffer is written once (MPI calls other layouts erroneous; transports would differ in the result).
void checkDisjoint(const std::vector<std::size_t>& counts, const std::vector<std::size_t>& displs, const char* name,
                   const ErrorContext& ctx);
/// `values` must have one entry per rank.
void checkPerRank(const std::vector<std::size_t>& values, int size, const char* name, const ErrorContext& ctx);
/// Largest displs[i] + counts[i]: the elements a buffer laid out this way spans (overflow-checked).
std::size_t extentOf(const std::vector<std::size_t>& counts, const std::vector<std::size_t>& displs, const char* name,
                     const ErrorContext& ctx);
/// A call's send and receive ranges (bytes) must not overlap, unless send lies where the call's in-place form puts
/// it (`inPlace`: the caller's verdict, `form` its rule for the message): any other overlap reads what the call
/// has already written, so the result would depend on the algorithm chosen. Empty or null ranges never overlap.
void checkOverlap(const void* send, std::size_t sendBytes, const void* recv, std::size_t recvBytes, bool inPlace,
                  const char* form, const ErrorContext& ctx);
/// Where block `index` of `blockBytes` each starts in `buffer` (null stays null): the address an in-place form
/// gives the other side (allgather's send at recv's block `rank`, reduce_scatter's recv at send's).
const void* blockAt(const void* buffer, std::size_t index, std::size_t blockBytes);
/// count * factor elements, overflow-checked.
std::size_t times(std::size_t count, std::size_t factor, const char* name, const ErrorContext& ctx);

}  // namespace braid::core
