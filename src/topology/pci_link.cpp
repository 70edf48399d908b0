#include "topology/pci_link.hpp"

#include <cstdlib>
#include <fstream>

namespace braid::topology {

int pcieGenerationOfSpeed(const std::string& speed) {
  char* end = nullptr;
  const double gts = std::strtod(speed.c_str(), &end);
  if (end == speed.c_str() || speed.find("GT/s", static_cast<std::size_t>(end - speed.c_str())) == std::string::npos) {
    return 0;
  }
  constexpr double kRates[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  for (int g = 0; g < 6; ++g) {
    if (gts > kRates[g] * 0.99 && gts < kRates[g] * 1.01) return g + 1;
  }
  return 0;
}

int pcieGeneration(const std::string& pciBusId, const std::string& root) {
  if (pciBusId.empty() || pciBusId.find('/') != std::string::npos) return 0;
  std::ifstream in(root + "/sys/bus/pci/devices/" + pciBusId + "/current_link_speed");
  std::string speed;
  if (!std::getline(in, speed)) return 0;
  return pcieGenerationOfSpeed(speed);
}

}  // namespace braid::topology
