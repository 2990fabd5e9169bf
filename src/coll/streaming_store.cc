#include "coll/streaming_store.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace psdp::coll {

void streamingStore(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  // Streaming stores need a 16-byte aligned destination; the head before it is copied plainly. SSE2 is
  // baseline x86-64, and wider stores would not help: the write-combining buffers fill whole lines anyway.
  size_t head = std::min<size_t>(bytes, (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15);
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  std::memcpy(d, s, bytes);
#else
  std::memcpy(dst, src, bytes);
#endif
}

void streamingFence() {
#if defined(__x86_64__)
  // Streaming stores are weakly ordered: without the fence, a peer told "done" could read stale lines.
  _mm_sfence();
#endif
}

void streamingCopy(void* dst, const void* src, size_t bytes) {
  if (bytes < kStreamingMinBytes) {
    std::memcpy(dst, src, bytes);
    return;
  }
  streamingStore(dst, src, bytes);
  streamingFence();
}

}  // namespace psdp::coll
