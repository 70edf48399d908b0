// braid's settings as data: every BRAID_* knob with its type, default and meaning, and the tune file `braid tune`
// writes. What `braid env --knobs` lists and what a results file records; a communicator reads the same table.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace braid {

enum class KnobType { kInt, kBytes, kSeconds, kString, kBool };

struct KnobInfo {
  std::string name;  ///< "BRAID_TIMEOUT"
  KnobType type;
  std::string defaultValue;  ///< as text, parsed by the same parser as the environment
  std::string doc;           ///< one line
};

/// Every knob, sorted by name.
const std::vector<KnobInfo>& allKnobs();
/// "int", "bytes", "seconds", "string" or "bool".
const char* knobTypeName(KnobType type);

/// "4K" -> 4096, "1M", "2G", plain numbers; nullopt when malformed.
std::optional<std::size_t> parseBytes(const std::string& text);

/// The tune file a communicator created now would read: BRAID_TUNE_FILE, else ~/.cache/braid/tune.env; empty
/// without either (no HOME).
std::string tuneFilePath();
/// The knobs a communicator created now would take from the tune file, because the environment does not set them:
/// "BRAID_DIRECT_MAX_BYTES=131072 from /root/.cache/braid/tune.env"; empty if none. InvalidArgument for a
/// malformed knob or tune file, as at a communicator's creation.
std::string tunedKnobs();
/// The text a communicator created now would take for the knob `name`: the environment's (set empty counts as set),
/// else the tune file's, else the default. InvalidArgument for a name that is no knob.
std::string knobValue(const std::string& name);

}  // namespace braid
