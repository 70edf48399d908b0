// The CPUs each rank of a run may use, as the results' meta records them (`meta.cpus`): what the kernel says the
// ranks got, beside what `meta.bind` says was asked. Each rank takes its mask, the job gathers the masks (each
// library by its own allgather), and the first rank writes them as cpulists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace braid::tools {

/// Words of one rank's mask: CPU_SETSIZE (1024) bits.
inline constexpr std::size_t kCpuMaskWords = 16;

/// The CPUs the calling thread may run on, kCpuMaskWords words, bit c of word c / 64 for CPU c (all zero where the
/// kernel would not say).
std::vector<std::uint64_t> cpuMaskOfThisThread();

/// One mask as the kernel writes a cpulist: "0-3,8,10-11"; "" for none.
std::string cpuListOf(const std::uint64_t* mask);

/// `ranks` masks laid end to end (an allgather of cpuMaskOfThisThread()) as a cpulist a rank, in rank order.
nlohmann::json cpuListsOf(const std::vector<std::uint64_t>& gathered, int ranks);

}  // namespace braid::tools
