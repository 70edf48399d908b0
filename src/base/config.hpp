// Every BRAID_* knob, declared once (name, type, default, one-line doc) in config.cpp's table, read in one
// place (Settings::fromEnvironment) and listed by allKnobs() (braid/knobs.hpp) for `braid env` and the docs.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "braid/knobs.hpp"

namespace braid {

/// Values of every knob for one communicator, taken from the environment at its creation.
struct Settings {
  double timeoutSeconds = 0;               // BRAID_TIMEOUT
  std::string algo;                        // BRAID_ALGO
  std::size_t directMaxBytes = 0;          // BRAID_DIRECT_MAX_BYTES
  std::string directMaxBytesByRanks;       // BRAID_DIRECT_MAX_BYTES_BY_RANKS
  std::size_t shmSlotBytes = 0;            // BRAID_SHM_SLOT_BYTES
  std::size_t shmP2pBytes = 0;             // BRAID_SHM_P2P_BYTES
  std::string shmSingleCopy;               // BRAID_SHM_SINGLE_COPY
  std::string shmStreamBytes;              // BRAID_SHM_STREAM_BYTES
  std::string shmThreads;                  // BRAID_SHM_THREADS
  long spinMicros = 0;                     // BRAID_SPIN_US
  std::string logLevel;                    // BRAID_LOG
  std::string transport;                   // BRAID_TRANSPORT
  std::string isa;                         // BRAID_CPU_ISA
  std::string debug;                       // BRAID_DEBUG
  long tcpStreams = 0;                     // BRAID_TCP_STREAMS
  std::size_t tcpBufferBytes = 0;          // BRAID_TCP_BUFFER_BYTES
  long tcpSpinMicros = 0;                  // BRAID_TCP_SPIN_US
  double heartbeatIntervalSeconds = 0;     // BRAID_HEARTBEAT_INTERVAL
  double heartbeatTimeoutSeconds = 0;      // BRAID_HEARTBEAT_TIMEOUT
  std::string ifname;                      // BRAID_IFNAME
  long cudaBlocks = 0;                     // BRAID_CUDA_BLOCKS
  std::size_t cudaWorkspaceBytes = 0;      // BRAID_CUDA_WORKSPACE_BYTES
  std::size_t cudaChunkBytes = 0;          // BRAID_CUDA_CHUNK_BYTES
  std::size_t cudaLlMaxBytes = 0;          // BRAID_CUDA_LL_MAX_BYTES
  std::size_t cudaOneshotMaxBytes = 0;     // BRAID_CUDA_ONESHOT_MAX_BYTES
  std::size_t cudaRegisteredMinBytes = 0;  // BRAID_CUDA_REGISTERED_MIN_BYTES
  std::string cudaMemory;                  // BRAID_CUDA_MEMORY
  std::string cudaSharedGpu;               // BRAID_CUDA_SHARED_GPU
  long cudaTimeline = 0;                   // BRAID_CUDA_TIMELINE
  std::string hierarchy;                   // BRAID_HIERARCHY
  std::size_t hierarchyMinBytes = 0;       // BRAID_HIERARCHY_MIN_BYTES
  std::string hostId;                      // BRAID_HOST_ID
  std::string compress;                    // BRAID_COMPRESS
  std::size_t netStagingWindowBytes = 0;   // BRAID_NET_STAGING_WINDOW
  std::string netStagingReduce;            // BRAID_NET_STAGING_REDUCE
  std::string flightRecorder;              // BRAID_FLIGHT_RECORDER
  std::string flightRecorderSignal;        // BRAID_FLIGHT_RECORDER_SIGNAL
  std::string trace;                       // BRAID_TRACE
  std::string tuneFile;                    // BRAID_TUNE_FILE
  /// The tuned values in use ("BRAID_DIRECT_MAX_BYTES=131072 from /root/.cache/braid/tune.env"); empty if none.
  std::string tuned;
  /// The knobs whose values came from the environment or the tune file, not their defaults.
  std::vector<std::string> givenKnobs;
  bool given(const std::string& name) const;
  // Launch identity (text; bootstrap/ parses and checks it).
  std::string rank;       // BRAID_RANK
  std::string worldSize;  // BRAID_WORLD_SIZE
  std::string localRank;  // BRAID_LOCAL_RANK
  std::string rootAddr;   // BRAID_ROOT_ADDR
  std::string token;      // BRAID_TOKEN, or what BRAID_TOKEN_FILE holds
  std::string tokenFile;  // BRAID_TOKEN_FILE
  long port = 0;          // BRAID_PORT

  using Lookup = std::function<std::optional<std::string>(const std::string&)>;
  /// Reads every knob through `lookup` (getenv by default); a knob it does not set takes its value from the tune
  /// file (`braid tune` writes it: BRAID_TUNE_FILE, by default ~/.cache/braid/tune.env when reading the real
  /// environment), else its default. A malformed value throws InvalidArgument naming the knob and the value.
  static Settings fromEnvironment(const Lookup& lookup = {});
};

}  // namespace braid
