#include "coll/direct_kernels.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "coll/streaming_store.h"
#include "transport/cross_memory.h"

namespace psdp::coll {
namespace {

void store(std::byte* dst, const std::byte* src, size_t bytes, bool streaming) {
  if (streaming) {
    streamingStore(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

// `bytes` of `source` where the combine can read them: in place, or read into `buffer`.
Result<const std::byte*> fetch(const DirectSource& source, size_t offset, size_t bytes, std::byte* buffer) {
  if (source.isLocal()) return source.local + offset;
  PSDP_RETURN_IF_ERROR(transport::readProcessMemory(source.pid, source.remote + offset, buffer, bytes));
  return static_cast<const std::byte*>(buffer);
}

}  // namespace

Status directReduce(const ReduceKernel& kernel, std::span<const DirectSource> inputs,
                    std::span<std::byte* const> outputs, size_t count, size_t elem_size, int nranks,
                    const DirectTiles& tiles, bool streaming) {
  const bool all_local = std::all_of(inputs.begin(), inputs.end(), [](const DirectSource& s) { return s.isLocal(); });
  const size_t tile_elems = std::max<size_t>(1, (all_local ? kDirectTileBytes : kDirectCmaTileBytes) / elem_size);
  // An output that is also an input (in place) was just read: its lines are in this core's cache, where a
  // plain store lands without a read-for-ownership, and a streaming store would only evict them.
  std::array<bool, kMaxDirectOutputs> streams{};
  for (size_t k = 0; k < outputs.size(); ++k) {
    streams[k] = streaming && std::none_of(inputs.begin(), inputs.end(),
                                           [&](const DirectSource& s) { return s.local == outputs[k]; });
  }
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(tile_elems, count - done);
    const size_t at = done * elem_size;
    const size_t bytes = n * elem_size;
    // The first input may be read into the result tile itself: combine allows dst == partial.
    PSDP_ASSIGN_OR_RETURN(const std::byte* first, fetch(inputs[0], at, bytes, tiles.result));
    for (size_t j = 1; j < inputs.size(); ++j) {
      PSDP_ASSIGN_OR_RETURN(const std::byte* next, fetch(inputs[j], at, bytes, tiles.read));
      kernel.combine(tiles.result, j == 1 ? first : tiles.result, next, n);
    }
    if (kernel.finalize != nullptr) kernel.finalize(tiles.result, n, nranks);
    for (size_t k = 0; k < outputs.size(); ++k) store(outputs[k] + at, tiles.result, bytes, streams[k]);
    done += n;
  }
  if (streaming) streamingFence();
  return Status::ok();
}

Status directCopy(std::byte* dst, const DirectSource& source, size_t bytes, bool streaming) {
  if (bytes == 0 || dst == source.local) return Status::ok();
  if (!source.isLocal()) return transport::readProcessMemory(source.pid, source.remote, dst, bytes);
  store(dst, source.local, bytes, streaming);
  if (streaming) streamingFence();
  return Status::ok();
}

}  // namespace psdp::coll
