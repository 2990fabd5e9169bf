#include "coll/direct_kernels.h"

#include <algorithm>

#include "coll/streaming_store.h"

namespace psdp::coll {

void directReduce(const ReduceKernel& kernel, std::span<const std::byte* const> inputs,
                  std::span<std::byte* const> outputs, size_t count, size_t elem_size, int nranks, std::byte* tile) {
  const size_t tile_elems = std::max<size_t>(1, kDirectTileBytes / elem_size);
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(tile_elems, count - done);
    const size_t at = done * elem_size;
    kernel.combine(tile, inputs[0] + at, inputs[1] + at, n);
    for (size_t j = 2; j < inputs.size(); ++j) kernel.combine(tile, tile, inputs[j] + at, n);
    if (kernel.finalize != nullptr) kernel.finalize(tile, n, nranks);
    for (std::byte* output : outputs) streamingStore(output + at, tile, n * elem_size);
    done += n;
  }
  streamingFence();
}

void directCopy(std::byte* dst, const std::byte* src, size_t bytes) {
  if (dst == src || bytes == 0) return;
  streamingStore(dst, src, bytes);
  streamingFence();
}

}  // namespace psdp::coll
