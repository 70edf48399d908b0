// One line about the machine a benchmark ran on: CPU model and usable cores, and the GPUs CUDA sees.
#pragma once

#include <string>

namespace braid::tools {

std::string machineDescription();

}  // namespace braid::tools
