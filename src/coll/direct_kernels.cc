#include "coll/direct_kernels.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "coll/streaming_store.h"

namespace psdp::coll {

namespace {

void store(std::byte* dst, const std::byte* src, size_t bytes, bool streaming) {
  if (streaming) {
    streamingStore(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

}  // namespace

void directReduce(const ReduceKernel& kernel, std::span<const std::byte* const> inputs,
                  std::span<std::byte* const> outputs, size_t count, size_t elem_size, int nranks, std::byte* tile,
                  bool streaming) {
  const size_t tile_elems = std::max<size_t>(1, kDirectTileBytes / elem_size);
  // An output that is also an input (in place) was just read: its lines are in this core's cache, where a
  // plain store lands without a read-for-ownership, and a streaming store would only evict them.
  std::array<bool, kMaxDirectOutputs> streams{};
  for (size_t k = 0; k < outputs.size(); ++k) {
    streams[k] = streaming && std::find(inputs.begin(), inputs.end(), outputs[k]) == inputs.end();
  }
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(tile_elems, count - done);
    const size_t at = done * elem_size;
    kernel.combine(tile, inputs[0] + at, inputs[1] + at, n);
    for (size_t j = 2; j < inputs.size(); ++j) kernel.combine(tile, tile, inputs[j] + at, n);
    if (kernel.finalize != nullptr) kernel.finalize(tile, n, nranks);
    for (size_t k = 0; k < outputs.size(); ++k) store(outputs[k] + at, tile, n * elem_size, streams[k]);
    done += n;
  }
  if (streaming) streamingFence();
}

void directCopy(std::byte* dst, const std::byte* src, size_t bytes, bool streaming) {
  if (dst == src || bytes == 0) return;
  store(dst, src, bytes, streaming);
  if (streaming) streamingFence();
}

}  // namespace psdp::coll
