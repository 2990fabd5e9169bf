// ThreadSanitizer does not see the synchronisation a message carries through UCX, which it does not
// instrument: when ranks are threads of one process (the test rigs), the data a rank wrote before sending
// and another reads after receiving looks like a race. psdp states the edge itself: a send from rank A to
// rank B releases, the completion of B's receive from A acquires. Compiled away outside TSan builds.
#pragma once

#include <array>
#include <cstddef>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace psdp::transport::ucx {

#if defined(__SANITIZE_THREAD__)
namespace tsan_detail {
// One sync address per ordered pair of ranks (pairs that share one only gain edges, never lose one).
inline std::array<char, 4096> channels;
inline void* channel(int from, int to) {
  return &channels[(static_cast<size_t>(from) * 131 + static_cast<size_t>(to)) % channels.size()];
}
}  // namespace tsan_detail
inline void tsanMessageSent(int from, int to) {
  __tsan_release(tsan_detail::channel(from, to));
}
inline void tsanMessageReceived(int from, int to) {
  __tsan_acquire(tsan_detail::channel(from, to));
}
#else
inline void tsanMessageSent(int, int) {}
inline void tsanMessageReceived(int, int) {}
#endif

}  // namespace psdp::transport::ucx
