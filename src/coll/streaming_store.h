// Copies of final results that the copying thread will not read again. Non-temporal stores skip the
// read-for-ownership of every destination line (for a copy much larger than the caches, one memory stream
// in three) and keep the data out of the caches the transfers are using. Out-of-place all-gather's copy of
// the rank's own block uses it: measured with psdp-perf on 2 ranks, 16-256 MiB, it lifts out-of-place
// busbw by 15-45% over memcpy (glibc streams only copies above 3/4 of the L3 size). The direct algorithms
// (direct_kernels.h) store every result this way.
#pragma once

#include <cstddef>

namespace psdp::coll {

// Below this the destination is likely still in cache when someone reads it, and the fence costs more than
// the reads it saves: streamingCopy is then memcpy.
inline constexpr size_t kStreamingMinBytes = size_t{256} << 10;

// memcpy(dst, src, bytes); dst and src do not overlap. Stores are fenced before it returns, so a peer told
// afterwards (through the transport) sees them.
void streamingCopy(void* dst, const void* src, size_t bytes);

// memcpy(dst, src, bytes) with non-temporal stores whatever the size, not fenced: a run of them ends with
// one streamingFence() before anyone else may read the destinations.
void streamingStore(void* dst, const void* src, size_t bytes);
void streamingFence();

}  // namespace psdp::coll
