// braid/elements.hpp's reads and writes of single elements, through the same conversions the reductions use.
#include <cstdint>
#include <cstring>

#include "base/data_type.hpp"
#include "base/float8.hpp"
#include "base/half.hpp"
#include "braid/elements.hpp"

namespace braid {

double loadElement(const void* buf, std::size_t i, DataType t) {
  const auto* p = static_cast<const std::byte*>(buf) + i * dataTypeSize(t);
  auto get = [p]<typename T>(T) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (t) {
    case DataType::kBool:
      return get(std::uint8_t{});
    case DataType::kInt8:
      return get(std::int8_t{});
    case DataType::kUint8:
      return get(std::uint8_t{});
    case DataType::kInt32:
      return get(std::int32_t{});
    case DataType::kUint32:
      return get(std::uint32_t{});
    case DataType::kInt64:
      return static_cast<double>(get(std::int64_t{}));
    case DataType::kUint64:
      return static_cast<double>(get(std::uint64_t{}));
    case DataType::kFloat16:
      return halfToFloat(get(std::uint16_t{}));
    case DataType::kBFloat16:
      return bfloat16ToFloat(get(std::uint16_t{}));
    case DataType::kFloat32:
      return get(float{});
    case DataType::kFloat64:
      return get(double{});
    case DataType::kFloat8E4M3:
      return float8E4M3ToFloat(get(std::uint8_t{}));
    case DataType::kFloat8E5M2:
      return float8E5M2ToFloat(get(std::uint8_t{}));
  }
  return 0;
}

void storeElement(void* buf, std::size_t i, DataType t, double v) {
  auto* p = static_cast<std::byte*>(buf) + i * dataTypeSize(t);
  auto put = [p]<typename T>(T v) { std::memcpy(p, &v, sizeof v); };
  const auto asInt = static_cast<std::int64_t>(v);
  switch (t) {
    case DataType::kBool:
      put(static_cast<std::uint8_t>(v != 0));
      break;
    case DataType::kInt8:
      put(static_cast<std::int8_t>(asInt));
      break;
    case DataType::kUint8:
      put(static_cast<std::uint8_t>(asInt));
      break;
    case DataType::kInt32:
      put(static_cast<std::int32_t>(asInt));
      break;
    case DataType::kUint32:
      put(static_cast<std::uint32_t>(asInt));
      break;
    case DataType::kInt64:
      put(asInt);
      break;
    case DataType::kUint64:
      put(static_cast<std::uint64_t>(asInt));
      break;
    case DataType::kFloat16:
      put(floatToHalf(static_cast<float>(v)));
      break;
    case DataType::kBFloat16:
      put(floatToBfloat16(static_cast<float>(v)));
      break;
    case DataType::kFloat32:
      put(static_cast<float>(v));
      break;
    case DataType::kFloat64:
      put(v);
      break;
    case DataType::kFloat8E4M3:
      put(floatToFloat8E4M3(static_cast<float>(v)));
      break;
    case DataType::kFloat8E5M2:
      put(floatToFloat8E5M2(static_cast<float>(v)));
      break;
  }
}

}  // namespace braid
