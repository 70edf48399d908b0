// braid tune's arithmetic (the crossover of two made-up sweeps) and its file, which every communicator's settings
// read under the environment.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/config.hpp"
#include "base/error.hpp"
#include "braid/knobs.hpp"
#include "tune_crossover.hpp"

namespace braid::tools {
namespace {

TEST(Tune, DirectKeepsTheSizesUpToWhereRsagWinsForGood) {
  // rsag wins from 64 KiB on; a noisy win at 8 KiB (then a loss) does not count.
  const std::map<std::size_t, double> direct = {{4096, 10},  {8192, 12},  {16384, 15},
                                                {32768, 20}, {65536, 40}, {131072, 80}};
  const std::map<std::size_t, double> rsag = {{4096, 20},  {8192, 11},  {16384, 18},
                                              {32768, 21}, {65536, 30}, {131072, 45}};
  const Crossover c = keepUpTo(direct, rsag, "direct", "rsag");
  EXPECT_EQ(c.maxBytes, 32768u);
  EXPECT_NE(c.why.find("rsag is faster than direct from 65536 B on"), std::string::npos) << c.why;
  // Never beaten (within noise): the first keeps everything; always beaten: below the smallest size.
  EXPECT_EQ(keepUpTo({{1024, 10}, {2048, 10}}, {{1024, 9.8}, {2048, 10.1}}, "a", "b").maxBytes, 2048u);
  EXPECT_EQ(keepUpTo({{1024, 10}, {2048, 10}}, {{1024, 5}, {2048, 5}}, "a", "b").maxBytes, 512u);
  EXPECT_EQ(keepUpTo({}, {{1024, 5}}, "a", "b").maxBytes, 0u);
}

TEST(Tune, TheTuneFileFillsWhatTheEnvironmentLeavesUnset) {
  const std::string path = std::filesystem::temp_directory_path() / ("braid-tune-" + std::to_string(::getpid()));
  std::ofstream(path) << "# braid tune\nBRAID_DIRECT_MAX_BYTES=131072\nexport BRAID_SPIN_US='7'\n";
  auto lookup = [&](std::map<std::string, std::string> env) {
    return [env, path](const std::string& name) -> std::optional<std::string> {
      if (name == "BRAID_TUNE_FILE") return path;
      const auto it = env.find(name);
      return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
  };
  const Settings tuned = Settings::fromEnvironment(lookup({}));
  EXPECT_EQ(tuned.directMaxBytes, 131072u);
  EXPECT_EQ(tuned.spinMicros, 7);
  EXPECT_NE(tuned.tuned.find("BRAID_DIRECT_MAX_BYTES=131072"), std::string::npos) << tuned.tuned;
  EXPECT_NE(tuned.tuned.find(path), std::string::npos) << tuned.tuned;
  const Settings overridden = Settings::fromEnvironment(lookup({{"BRAID_DIRECT_MAX_BYTES", "4096"}}));
  EXPECT_EQ(overridden.directMaxBytes, 4096u);  // the environment wins
  EXPECT_EQ(overridden.tuned.find("BRAID_DIRECT_MAX_BYTES"), std::string::npos) << overridden.tuned;
  std::filesystem::remove(path);
  // A lookup without BRAID_TUNE_FILE reads no file at all (tests stay hermetic).
  const Settings plain = Settings::fromEnvironment([](const std::string&) { return std::nullopt; });
  EXPECT_TRUE(plain.tuned.empty());
}

// Sets environment variables for a scope and puts back what was there, whatever the test does in between.
class ScopedEnv {
 public:
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        ::unsetenv(it->first.c_str());
      }
    }
  }
  void set(const std::string& name, const char* value) {
    const char* was = std::getenv(name.c_str());
    saved_.emplace_back(name, was ? std::optional<std::string>(was) : std::nullopt);
    if (value) {
      ::setenv(name.c_str(), value, 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// What braid bench reads to bind its ranks (BRAID_SHM_THREADS): the environment's value, else the tune file's, else
// the default, trimmed as a communicator takes it.
TEST(Tune, KnobValueIsWhatACommunicatorWouldTake) {
  const char* const name = "BRAID_SHM_THREADS";
  const std::string path = std::filesystem::temp_directory_path() / ("braid-knob-" + std::to_string(::getpid()));
  struct Remove {
    std::string path;
    ~Remove() { std::filesystem::remove(path); }
  } remove{path};
  std::ofstream(path) << "BRAID_SHM_THREADS=1 \n";
  ScopedEnv env;
  env.set(name, nullptr);
  env.set("BRAID_TUNE_FILE", "/nonexistent/braid-tune.env");
  EXPECT_EQ(knobValue(name), "auto");  // the default
  env.set("BRAID_TUNE_FILE", path.c_str());
  EXPECT_EQ(knobValue(name), "1");  // the tune file's, trimmed
  env.set(name, " 4");
  EXPECT_EQ(knobValue(name), "4");  // the environment wins
  EXPECT_EQ(Settings::fromEnvironment().shmThreads, "4");
  env.set(name, "");
  EXPECT_EQ(knobValue(name), "");  // set empty is set
  EXPECT_EQ(Settings::fromEnvironment().shmThreads, "");
  try {
    knobValue("BRAID_NO_SUCH_KNOB");
    ADD_FAILURE() << "an unknown knob had a value";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("BRAID_NO_SUCH_KNOB"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid::tools
