// The library's reduce-op checks against the support table the tests run from (support/reduce_support.hpp): every
// combination the table lists must be accepted, every other refused with InvalidArgument naming the op and the type.
#include "support/reduce_support.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <string>

#include "base/data_type.hpp"
#include "base/elementwise_op.hpp"
#include "braid/braid.hpp"

namespace braid::testing {
namespace {

// `word` stands in `text` on its own: "float16" inside "bfloat16" does not count.
bool namesWord(const std::string& text, const std::string& word) {
  auto partOfName = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (auto at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool startsWord = at == 0 || !partOfName(text[at - 1]);
    const bool endsWord = at + word.size() == text.size() || !partOfName(text[at + word.size()]);
    if (startsWord && endsWord) return true;
  }
  return false;
}

// An op as a caller passes it: premul_sum with an integral scale, which every type that has premul_sum accepts.
ReduceOp callerOp(ReduceKind kind) { return kind == ReduceKind::kPremulSum ? ReduceOp::premulSum(3) : ReduceOp(kind); }

TEST(ReduceSupport, LibraryAgreesWithTheTableOnEveryTypeAndOp) {
  int accepted = 0;
  for (int t = 0; t < kNumDataTypes; ++t) {
    const auto type = static_cast<DataType>(t);
    for (int k = 0; k < kNumReduceKinds; ++k) {
      const auto kind = static_cast<ReduceKind>(k);
      const std::string what = std::string(reduceKindName(kind)) + " on " + dataTypeName(type);
      SCOPED_TRACE(what);
      EXPECT_EQ(reductionSupported(type, kind), expectReduceSupported(type, kind));
      // The kernels' compile-time answer refuses exactly what the checks refuse.
      EXPECT_EQ(elementwiseOpOf(type, kind).has_value(), expectReduceSupported(type, kind));
      if (expectReduceSupported(type, kind)) {
        ++accepted;
        EXPECT_NO_THROW(checkReduceSupported(type, callerOp(kind), "allreduce"));
        continue;
      }
      try {
        checkReduceSupported(type, callerOp(kind), "allreduce");
        ADD_FAILURE() << what << " was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
        const std::string message = e.what();
        EXPECT_TRUE(namesWord(message, reduceKindName(kind))) << message;
        EXPECT_TRUE(namesWord(message, dataTypeName(type))) << message;
      }
    }
  }
  // 13 types x 9 ops, less bitwise on the 6 float types and avg/premul_sum on bool.
  EXPECT_EQ(accepted, 117 - 18 - 2);
}

// The kernels' compile-time answer (elementwiseOpOf) resolves the aliases; which pairs it refuses is checked with the
// library's checks above.
TEST(ReduceSupport, KernelOpResolvesTheAliases) {
  EXPECT_EQ(elementwiseOpOf(DataType::kBool, ReduceKind::kSum), ElementwiseOp::kBor);
  EXPECT_EQ(elementwiseOpOf(DataType::kBool, ReduceKind::kMax), ElementwiseOp::kBor);
  EXPECT_EQ(elementwiseOpOf(DataType::kBool, ReduceKind::kProd), ElementwiseOp::kBand);
  EXPECT_EQ(elementwiseOpOf(DataType::kBool, ReduceKind::kMin), ElementwiseOp::kBand);
  EXPECT_EQ(elementwiseOpOf(DataType::kBFloat16, ReduceKind::kPremulSum), ElementwiseOp::kSum);
  EXPECT_EQ(elementwiseOpOf(DataType::kInt32, ReduceKind::kAvg), ElementwiseOp::kAvg);
  EXPECT_EQ(elementwiseOpOf(DataType::kUint8, ReduceKind::kBxor), ElementwiseOp::kBxor);
  EXPECT_EQ(elementwiseOpOf(static_cast<DataType>(kNumDataTypes), ReduceKind::kSum), std::nullopt);
  EXPECT_EQ(elementwiseOpOf(DataType::kFloat32, static_cast<ReduceKind>(kNumReduceKinds)), std::nullopt);
}

// premul_sum's scale: any finite one on float types, integral ones only on integer types.
TEST(ReduceSupport, PremulSumScaleRules) {
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64,
                        DataType::kFloat8E4M3, DataType::kFloat8E5M2}) {
    SCOPED_TRACE(dataTypeName(type));
    EXPECT_NO_THROW(checkReduceSupported(type, ReduceOp::premulSum(0.5), "allreduce"));
    EXPECT_THROW(checkReduceSupported(type, ReduceOp::premulSum(HUGE_VAL), "allreduce"), Error);
  }
  for (DataType type :
       {DataType::kInt8, DataType::kUint8, DataType::kInt32, DataType::kUint32, DataType::kInt64, DataType::kUint64}) {
    SCOPED_TRACE(dataTypeName(type));
    EXPECT_NO_THROW(checkReduceSupported(type, ReduceOp::premulSum(-2), "allreduce"));
    try {
      checkReduceSupported(type, ReduceOp::premulSum(0.5), "allreduce");
      ADD_FAILURE() << "a fractional scale was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_TRUE(namesWord(e.what(), dataTypeName(type))) << e.what();
    }
  }
}

}  // namespace
}  // namespace braid::testing
