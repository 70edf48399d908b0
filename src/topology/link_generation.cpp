#include "topology/link_generation.hpp"

#include <cstdlib>
#include <fstream>

namespace braid::topology {

int nvlinkGeneration(int ccMajor, int ccMinor) {
  switch (ccMajor) {
    case 7:
      return ccMinor == 0 || ccMinor == 2 ? 2 : 0;  // V100 and Xavier's GV10B; Turing's bridges aside
    case 8:
      return ccMinor == 0 || ccMinor == 6 ? 3 : 0;  // A100; GA10x's bridges (8.7 is Orin, 8.9 Ada)
    case 9:
      return 4;  // H100, H200, GH200
    case 10:
      return 5;  // B200, GB200, B300
    default:
      return 0;  // 12.x (RTX 50, RTX PRO) has no NVLink
  }
}

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
