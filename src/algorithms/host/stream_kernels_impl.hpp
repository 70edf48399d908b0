// The streaming copy of every kernel set (reduce_cpu.hpp's streamBytes), compiled with each: the widest
// non-temporal store the set's -m flags allow. Included after reduce_kernels_impl.hpp by the three kernel-set
// translation units only, for the reasons its ODR note gives.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace braid::host::detail {
namespace {

// dst's whole lines with non-temporal stores, its partial first and last lines the ordinary way.
void streamCopyEntry(void* dstRaw, const void* srcRaw, std::size_t bytes) {
  auto* dst = static_cast<char*>(dstRaw);
  const auto* src = static_cast<const char*>(srcRaw);
  std::size_t head = (64 - reinterpret_cast<std::uintptr_t>(dst) % 64) % 64;
  if (head > bytes) head = bytes;
  __builtin_memcpy(dst, src, head);
  std::size_t i = head;
#if defined(__AVX512F__)
  for (; i + 64 <= bytes; i += 64) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), _mm512_loadu_si512(static_cast<const void*>(src + i)));
  }
#elif defined(__AVX2__)
  for (; i + 64 <= bytes; i += 64) {
    const auto* s = reinterpret_cast<const __m256i*>(src + i);
    auto* d = reinterpret_cast<__m256i*>(dst + i);
    _mm256_stream_si256(d, _mm256_loadu_si256(s));
    _mm256_stream_si256(d + 1, _mm256_loadu_si256(s + 1));
  }
#elif defined(__SSE2__)
  for (; i + 64 <= bytes; i += 64) {
    const auto* s = reinterpret_cast<const __m128i*>(src + i);
    auto* d = reinterpret_cast<__m128i*>(dst + i);
    for (int k = 0; k < 4; ++k) _mm_stream_si128(d + k, _mm_loadu_si128(s + k));
  }
#endif
  __builtin_memcpy(dst + i, src + i, bytes - i);
}

}  // namespace
}  // namespace braid::host::detail
