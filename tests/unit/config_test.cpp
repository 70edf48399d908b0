#include "base/config.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "base/data_type.hpp"
#include "base/deadline.hpp"

namespace braid {
namespace {

Settings::Lookup fromMap(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Config, DefaultsParse) {
  const Settings s = Settings::fromEnvironment(fromMap({}));
  EXPECT_EQ(s.timeoutSeconds, 600);
  EXPECT_EQ(s.shmSlotBytes, 0u);  // by the rank count
  EXPECT_EQ(s.directMaxBytes, 64u << 10);
}

TEST(Config, EveryKnobDeclaredOnceWithDoc) {
  std::set<std::string> names;
  for (const auto& knob : allKnobs()) {
    EXPECT_TRUE(knob.name.rfind("BRAID_", 0) == 0) << knob.name;
    EXPECT_FALSE(knob.doc.empty()) << knob.name;
    EXPECT_TRUE(names.insert(knob.name).second) << "declared twice: " << knob.name;
  }
}

TEST(Config, EnvironmentOverridesAndSuffixes) {
  const Settings s = Settings::fromEnvironment(
      fromMap({{"BRAID_TIMEOUT", "2.5"}, {"BRAID_SHM_SLOT_BYTES", "4M"}, {"BRAID_DIRECT_MAX_BYTES", "512KiB"}}));
  EXPECT_DOUBLE_EQ(s.timeoutSeconds, 2.5);
  EXPECT_EQ(s.shmSlotBytes, 4u << 20);
  EXPECT_EQ(s.directMaxBytes, 512u << 10);
}

TEST(Config, MalformedValueNamesKnobAndValue) {
  try {
    Settings::fromEnvironment(fromMap({{"BRAID_SHM_SLOT_BYTES", "lots"}}));
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("BRAID_SHM_SLOT_BYTES='lots'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Settings::fromEnvironment(fromMap({{"BRAID_TIMEOUT", "-1"}})), Error);
  EXPECT_THROW(Settings::fromEnvironment(fromMap({{"BRAID_SPIN_US", "12x"}})), Error);
}

// BRAID_TOKEN_FILE: read when only its owner may read it; refused, saying how to fix it, otherwise.
TEST(Config, TokenFileMustBePrivate) {
  char path[] = "/tmp/braid-token-XXXXXX";
  const int fd = ::mkstemp(path);  // mode 0600
  ASSERT_GE(fd, 0);
  ::close(fd);
  const std::string secret = "0123456789abcdef0123456789abcdef";
  std::ofstream(path) << secret << "\n";
  EXPECT_EQ(Settings::fromEnvironment(fromMap({{"BRAID_TOKEN_FILE", path}})).token, secret);
  try {
    Settings::fromEnvironment(fromMap({{"BRAID_TOKEN_FILE", path}, {"BRAID_TOKEN", secret}}));
    ADD_FAILURE() << "both set was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("both set"), std::string::npos) << e.what();
  }
  ::chmod(path, 0644);
  try {
    Settings::fromEnvironment(fromMap({{"BRAID_TOKEN_FILE", path}}));
    ADD_FAILURE() << "a world-readable token file was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("mode 0644"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("chmod 600"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find(secret), std::string::npos) << "the error shows the secret";
  }
  ::unlink(path);
  EXPECT_THROW(Settings::fromEnvironment(fromMap({{"BRAID_TOKEN_FILE", path}})), Error);  // gone
}

TEST(Config, ParseBytes) {
  EXPECT_EQ(parseBytes("0"), 0u);
  EXPECT_EQ(parseBytes("8"), 8u);
  EXPECT_EQ(parseBytes("1K"), 1024u);
  EXPECT_EQ(parseBytes("1G"), 1u << 30);
  EXPECT_EQ(parseBytes("3m"), 3u << 20);
  EXPECT_FALSE(parseBytes(""));
  EXPECT_FALSE(parseBytes("K"));
  EXPECT_FALSE(parseBytes("1T"));
  EXPECT_FALSE(parseBytes("99999999999999999999G"));
}

TEST(DataTypes, NamesRoundTripAndNcclTestsAliases) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    const auto t = static_cast<DataType>(i);
    EXPECT_EQ(parseDataType(dataTypeName(t)), t);
    EXPECT_GT(dataTypeSize(t), 0u);
  }
  EXPECT_EQ(parseDataType("float"), DataType::kFloat32);
  EXPECT_EQ(parseDataType("half"), DataType::kFloat16);
  EXPECT_EQ(parseDataType("double"), DataType::kFloat64);
  EXPECT_EQ(parseDataType("int32"), DataType::kInt32);
  EXPECT_EQ(parseDataType("float8_e4m3"), DataType::kFloat8E4M3);
  EXPECT_EQ(parseDataType("FP8_E4M3"), DataType::kFloat8E4M3);
  EXPECT_EQ(parseDataType("e4m3"), DataType::kFloat8E4M3);
  EXPECT_EQ(parseDataType("float8_e4m3fn"), DataType::kFloat8E4M3);  // PyTorch's name of the same type
  EXPECT_EQ(parseDataType("float8_e5m2"), DataType::kFloat8E5M2);
  EXPECT_EQ(parseDataType("fp8_e5m2"), DataType::kFloat8E5M2);
  EXPECT_EQ(parseDataType("E5M2"), DataType::kFloat8E5M2);
  EXPECT_EQ(dataTypeSize(DataType::kFloat8E4M3), 1u);
  EXPECT_EQ(dataTypeSize(DataType::kFloat8E5M2), 1u);
  EXPECT_FALSE(parseDataType("fp8"));              // which of the two: not guessed
  EXPECT_FALSE(parseDataType("float8_e4m3fnuz"));  // another type (no negative zero, NaN at 0x80)
  EXPECT_FALSE(parseDataType("complex64"));
  for (int i = 0; i < kNumReduceKinds; ++i) {
    const auto k = static_cast<ReduceKind>(i);
    EXPECT_EQ(parseReduceKind(reduceKindName(k)), k);
  }
}

TEST(DataTypes, UnsupportedReductionsAreRefusedWithNames) {
  EXPECT_THROW(checkReduceSupported(DataType::kFloat32, ReduceKind::kBxor, "allreduce"), Error);
  EXPECT_THROW(checkReduceSupported(DataType::kBool, ReduceKind::kAvg, "allreduce"), Error);
  EXPECT_THROW(checkReduceSupported(DataType::kInt32, ReduceOp::premulSum(0.5), "allreduce"), Error);
  EXPECT_NO_THROW(checkReduceSupported(DataType::kInt32, ReduceOp::premulSum(3), "allreduce"));
  EXPECT_NO_THROW(checkReduceSupported(DataType::kUint8, ReduceKind::kBand, "allreduce"));
  EXPECT_THROW(checkReduceSupported(DataType::kFloat8E4M3, ReduceKind::kBand, "allreduce"), Error);
  EXPECT_THROW(checkReduceSupported(DataType::kFloat8E5M2, ReduceKind::kBxor, "allreduce"), Error);
  EXPECT_NO_THROW(checkReduceSupported(DataType::kFloat8E5M2, ReduceOp::premulSum(0.5), "allreduce"));
  try {
    checkReduceSupported(DataType::kFloat16, ReduceKind::kBor, "reduce");
    ADD_FAILURE() << "bor on float16 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("float16"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bor"), std::string::npos) << e.what();
  }
}

// A timeout past the clock's range (BRAID_TIMEOUT=1e20) waits for ever; it must not wrap to a deadline gone already.
TEST(Deadline, AHugeTimeoutIsNeverNotAlreadyPast) {
  for (const double seconds : {1e20, 1e12, std::numeric_limits<double>::infinity()}) {
    const Deadline d = Deadline::after(seconds);
    EXPECT_TRUE(d.infinite()) << seconds;
    EXPECT_FALSE(d.expired()) << seconds;
  }
  EXPECT_FALSE(Deadline::after(600).infinite());
  EXPECT_FALSE(Deadline::after(600).expired());
  EXPECT_TRUE(Deadline::after(-1).expired());
}

}  // namespace
}  // namespace braid
