// scaleCopyOnDevice (premul_sum's pre-scaling) against the test's own scaling of each element (ref::scaleAt in
// gpu/reference_values.hpp: the documented rule with the tests' own float16/bfloat16/float8 rounding, not braid's CPU
// scaleCopy), argument checks of both device entry points, and the CUDA error mapping.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_test_support.hpp"
#include "gpu/reference_values.hpp"
#include "support/reduce_reference.hpp"

namespace braid::gputest {
namespace {

// want[j] = src[j] scaled, computed on the host by the test (every NaN canonical, as the GPU writes it).
void referenceScale(std::byte* want, const std::byte* src, std::size_t count, DataType type, double scale) {
  for (std::size_t j = 0; j < count; ++j) {
    ref::putBitsAt(want, j, type, ref::scaleAt(ref::bitsAt(src, j, type), type, scale));
  }
}

::testing::AssertionResult sameScaled(const std::byte* got, const std::byte* want, std::size_t count, DataType type) {
  const std::size_t size = dataTypeSize(type);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t g = getBits(got, i, size);
    const std::uint64_t w = getBits(want, i, size);
    if (g != w) {
      return ::testing::AssertionFailure()
             << "element " << i << ": gpu " << hex(g, size) << " vs expected " << hex(w, size);
    }
  }
  return ::testing::AssertionSuccess();
}

class DeviceScale : public GpuTest, public ::testing::WithParamInterface<DataType> {};

TEST_P(DeviceScale, MatchesReferenceEveryScaleCountAndPlacement) {
  const DataType type = GetParam();
  const std::size_t size = dataTypeSize(type);
  constexpr std::size_t kMaxCount = (std::size_t{1} << 20) + 3;
  const std::vector<double> scales =
      isFloating(type) ? std::vector<double>{0.5, 3.0, -1.25, 1.0 / 3.0, 1e-6, 7e4, 0.0, -0.0, 1e-30, 3e38, 1e300}
                       : std::vector<double>{1, 3, -2, 300, 0x1p40 + 1, -0x1p63, 1e20, 0};
  std::vector<std::byte> src((kMaxCount + 1) * size), want(src.size()), got(src.size());
  std::mt19937_64 rng(17 + static_cast<int>(type));
  fillWild(src.data(), kMaxCount + 1, type, rng);
  DeviceBuffer dsrc(src.size()), ddst(src.size());
  toDevice(dsrc.data(), src.data(), src.size(), stream());
  for (double scale : scales) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1023}, kMaxCount}) {
      // aligned; both shifted by one element; only the source shifted (one element at a time)
      for (auto [srcShift, dstShift] : {std::pair<std::size_t, std::size_t>{0, 0}, {size, size}, {size, 0}}) {
        SCOPED_TRACE(
            strCat(dataTypeName(type), " scale=", scale, " count=", count, " src+", srcShift, " dst+", dstShift));
        cuda::scaleCopyOnDevice(ddst.data() + dstShift, dsrc.data() + srcShift, count, type, scale, stream().get());
        toHost(got.data(), ddst.data() + dstShift, count * size, stream());
        referenceScale(want.data(), src.data() + srcShift, count, type, scale);
        stream().sync();
        ASSERT_TRUE(sameScaled(got.data(), want.data(), count, type));
      }
    }
    // In place.
    DeviceBuffer inout(src.size());
    toDevice(inout.data() + size, src.data() + size, kMaxCount * size, stream());
    cuda::scaleCopyOnDevice(inout.data() + size, inout.data() + size, kMaxCount, type, scale, stream().get());
    toHost(got.data(), inout.data() + size, kMaxCount * size, stream());
    referenceScale(want.data(), src.data() + size, kMaxCount, type, scale);
    stream().sync();
    ASSERT_TRUE(sameScaled(got.data(), want.data(), kMaxCount, type)) << dataTypeName(type) << " in place";
  }
}

// One times f rounds f itself once: every rounding boundary of float16 and bfloat16, reached from float64
// products (the CPU test's edge list, plus random scales).
class DeviceScaleHalf : public DeviceScale {};

TEST_P(DeviceScaleHalf, RoundsOnceAtEdges) {
  const DataType type = GetParam();
  const std::vector<float> scales = braid::testing::halfRoundingScales(2000);
  std::vector<std::byte> one(2), got(2), want(2);
  putBits(one.data(), 0, 2, floatBits(type, 1.0));
  DeviceBuffer dsrc(2), ddst(2);
  toDevice(dsrc.data(), one.data(), 2, stream());
  for (float f : scales) {
    for (float s : {f, -f}) {
      cuda::scaleCopyOnDevice(ddst.data(), dsrc.data(), 1, type, s, stream().get());
      toHost(got.data(), ddst.data(), 2, stream());
      referenceScale(want.data(), one.data(), 1, type, s);
      stream().sync();
      ASSERT_TRUE(sameScaled(got.data(), want.data(), 1, type))
          << dataTypeName(type) << " scale bits " << hex(std::bit_cast<std::uint32_t>(s), 4);
    }
  }
}

// float8: ones times every rounding boundary of the type (midpoints and their neighbours, the largest value and
// past it, the subnormals, infinities, NaNs), and every code times scales that round, saturate or underflow.
class DeviceScaleFloat8 : public DeviceScale {};

TEST_P(DeviceScaleFloat8, RoundsOnceAtEdges) {
  const DataType type = GetParam();
  const std::vector<float> scales = testing::fp8::roundingBoundaries(testing::fp8::formatOf(type));
  std::vector<std::byte> one(1), got(1), want(1);
  putBits(one.data(), 0, 1, floatBits(type, 1.0));
  DeviceBuffer dsrc(1), ddst(1);
  toDevice(dsrc.data(), one.data(), 1, stream());
  for (float s : scales) {
    cuda::scaleCopyOnDevice(ddst.data(), dsrc.data(), 1, type, s, stream().get());
    toHost(got.data(), ddst.data(), 1, stream());
    referenceScale(want.data(), one.data(), 1, type, s);
    stream().sync();
    ASSERT_TRUE(sameScaled(got.data(), want.data(), 1, type))
        << dataTypeName(type) << " scale bits " << hex(std::bit_cast<std::uint32_t>(s), 4);
  }
  std::vector<std::byte> all(256), allGot(256), allWant(256);
  for (int c = 0; c < 256; ++c) all[static_cast<std::size_t>(c)] = static_cast<std::byte>(c);
  DeviceBuffer dall(256), dout(256);
  toDevice(dall.data(), all.data(), 256, stream());
  for (double scale : {1.0, -1.0, 0.5, 3.0, 1.0 / 3.0, 0x1p-9, 1e5, 0.0, -0.0, 1e-30}) {
    cuda::scaleCopyOnDevice(dout.data(), dall.data(), 256, type, scale, stream().get());
    toHost(allGot.data(), dout.data(), 256, stream());
    referenceScale(allWant.data(), all.data(), 256, type, scale);
    stream().sync();
    ASSERT_TRUE(sameScaled(allGot.data(), allWant.data(), 256, type)) << dataTypeName(type) << " scale " << scale;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DeviceScale, ::testing::ValuesIn(kAllTypes),
                         [](const ::testing::TestParamInfo<DataType>& param) { return dataTypeName(param.param); });
INSTANTIATE_TEST_SUITE_P(HalfTypes, DeviceScaleHalf, ::testing::Values(DataType::kFloat16, DataType::kBFloat16),
                         [](const ::testing::TestParamInfo<DataType>& param) { return dataTypeName(param.param); });
INSTANTIATE_TEST_SUITE_P(Float8Types, DeviceScaleFloat8,
                         ::testing::Values(DataType::kFloat8E4M3, DataType::kFloat8E5M2),
                         [](const ::testing::TestParamInfo<DataType>& param) { return dataTypeName(param.param); });

class DeviceReduceErrors : public GpuTest {};

ErrorCode codeOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode{0};
}

TEST_F(DeviceReduceErrors, RefusesWhatTheCpuRefuses) {
  DeviceBuffer buf(4096);
  void* d = buf.data();
  const void* srcs[2] = {buf.data() + 1024, buf.data() + 2048};
  const auto reduce = [&](DataType t, ReduceKind k, int n = 2, std::size_t count = 4, int div = 1,
                          const void* const* s = nullptr, void* dst = nullptr) {
    return codeOf(
        [&] { cuda::reduceSourcesOnDevice(dst ? dst : d, s ? s : srcs, n, count, t, k, div, stream().get()); });
  };
  EXPECT_EQ(reduce(DataType::kFloat32, ReduceKind::kBand), ErrorCode::kInvalidArgument);
  EXPECT_EQ(reduce(DataType::kFloat16, ReduceKind::kBxor), ErrorCode::kInvalidArgument);
  EXPECT_EQ(reduce(DataType::kFloat8E4M3, ReduceKind::kBand), ErrorCode::kInvalidArgument);
  EXPECT_EQ(reduce(DataType::kFloat8E5M2, ReduceKind::kBor), ErrorCode::kInvalidArgument);
  EXPECT_EQ(reduce(DataType::kBool, ReduceKind::kAvg), ErrorCode::kInvalidArgument);
  EXPECT_EQ(reduce(DataType::kBool, ReduceKind::kPremulSum), ErrorCode::kInvalidArgument);
  EXPECT_EQ(reduce(static_cast<DataType>(42), ReduceKind::kSum), ErrorCode::kInvalidArgument);
  EXPECT_EQ(reduce(DataType::kInt32, static_cast<ReduceKind>(42)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(reduce(DataType::kInt32, ReduceKind::kSum, 0), ErrorCode::kInvalidArgument);
  EXPECT_EQ(reduce(DataType::kInt32, ReduceKind::kAvg, 2, 4, 0), ErrorCode::kInvalidArgument);
  const void* withNull[2] = {srcs[0], nullptr};
  EXPECT_EQ(reduce(DataType::kInt32, ReduceKind::kSum, 2, 4, 1, withNull), ErrorCode::kInvalidArgument);
  const void* misaligned[2] = {buf.data() + 1025, srcs[1]};  // not on an int32 boundary
  EXPECT_EQ(reduce(DataType::kInt32, ReduceKind::kSum, 2, 4, 1, misaligned), ErrorCode::kInvalidArgument);
  EXPECT_EQ(reduce(DataType::kInt32, ReduceKind::kSum, 2, 4, 1, nullptr, buf.data() + 2), ErrorCode::kInvalidArgument);
  // Nothing to do: no pointer is looked at, as on the CPU.
  EXPECT_NO_THROW(cuda::reduceSourcesOnDevice(nullptr, nullptr, 1, 0, DataType::kInt8, ReduceKind::kSum, 1, nullptr));

  EXPECT_EQ(codeOf([&] { cuda::scaleCopyOnDevice(d, srcs[0], 4, DataType::kInt32, 0.5, stream().get()); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(codeOf([&] { cuda::scaleCopyOnDevice(d, srcs[0], 4, DataType::kInt64, INFINITY, stream().get()); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(codeOf([&] { cuda::scaleCopyOnDevice(d, buf.data() + 1, 4, DataType::kFloat32, 2, stream().get()); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(codeOf([&] { cuda::scaleCopyOnDevice(nullptr, srcs[0], 4, DataType::kFloat32, 2, stream().get()); }),
            ErrorCode::kInvalidArgument);
  stream().sync();  // nothing was launched: no asynchronous error either
}

TEST_F(DeviceReduceErrors, MapsCudaErrors) {
  EXPECT_NO_THROW(cuda::checkCuda(cudaSuccess, "ok"));
  EXPECT_EQ(codeOf([] { cuda::checkCuda(cudaErrorNoDevice, "x"); }), ErrorCode::kUnavailable);
  EXPECT_EQ(codeOf([] { cuda::checkCuda(cudaErrorInsufficientDriver, "x"); }), ErrorCode::kUnavailable);
  EXPECT_EQ(codeOf([] { cuda::checkCuda(cudaErrorInvalidValue, "x"); }), ErrorCode::kInternal);
  try {
    cuda::checkCuda(cudaErrorMemoryAllocation, "cudaMalloc(staging)");
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cudaMalloc(staging): cudaErrorMemoryAllocation"), std::string::npos) << e.what();
  }
  EXPECT_GT(cuda::deviceCount(), 0);
}

}  // namespace
}  // namespace braid::gputest
