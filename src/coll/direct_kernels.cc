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

// `bytes` of `source` where the combine can read them: in place, or read into `buffer`.
Result<const std::byte*> fetch(const DirectSource& source, size_t offset, size_t bytes, std::byte* buffer) {
  if (source.isLocal()) return source.local + offset;
  PSDP_RETURN_IF_ERROR(source.memory->read(source.peer, source.remote + offset, buffer, bytes));
  return static_cast<const std::byte*>(buffer);
}

}  // namespace

Status directReduce(const ReduceKernel& kernel, std::span<const DirectSource> inputs,
                    std::span<std::byte* const> outputs, size_t count, size_t elem_size, int nranks,
                    const DirectTiles& tiles, bool streaming) {
  const bool all_local = std::all_of(inputs.begin(), inputs.end(), [](const DirectSource& s) { return s.isLocal(); });
  // A fetch tile is what one CMA read brings in; with every input addressable it is one store tile.
  const size_t store_elems =
      std::max<size_t>(1, (streaming ? kDirectStreamTileBytes : kDirectCacheTileBytes) / elem_size);
  const size_t fetch_elems = all_local ? store_elems : std::max<size_t>(1, kDirectFetchTileBytes / elem_size);
  // An output that is also an input (in place) was just read: its lines are in this core's cache, where a
  // plain store lands without a read-for-ownership, and a streaming store would only evict them.
  std::array<bool, kMaxDirectOutputs> streams{};
  for (size_t k = 0; k < outputs.size(); ++k) {
    streams[k] = streaming && std::none_of(inputs.begin(), inputs.end(),
                                           [&](const DirectSource& s) { return s.local == outputs[k]; });
  }
  // One output stored with plain stores takes the combine's results straight: its lines go to the cache either
  // way, and a pass through `stored` would copy every result once more (10% of a 4 MiB all-reduce's time).
  // The combine allows an output that is exactly one of its inputs (in place).
  const bool combine_into_output = outputs.size() == 1 && !streams[0];
  alignas(64) std::array<std::byte, std::max(kDirectStreamTileBytes, kDirectCacheTileBytes)> stored;
  const size_t last = inputs.size() - 1;
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(fetch_elems, count - done);
    const size_t at = done * elem_size;
    // Every input but the last is combined over the whole fetch tile into tiles.result (the first may be
    // read into it: combine allows dst == partial); the last is combined a store tile at a time, each
    // stored at once, so that the reads of the inputs and the stores of the results overlap.
    PSDP_ASSIGN_OR_RETURN(const std::byte* partial, fetch(inputs[0], at, n * elem_size, tiles.result));
    for (size_t j = 1; j < last; ++j) {
      PSDP_ASSIGN_OR_RETURN(const std::byte* next, fetch(inputs[j], at, n * elem_size, tiles.read));
      kernel.combine(tiles.result, partial, next, n);
      partial = tiles.result;
    }
    PSDP_ASSIGN_OR_RETURN(const std::byte* final_input, fetch(inputs[last], at, n * elem_size, tiles.read));
    if (combine_into_output) {
      kernel.combine(outputs[0] + at, partial, final_input, n);
      if (kernel.finalize != nullptr) kernel.finalize(outputs[0] + at, n, nranks);
      done += n;
      continue;
    }
    for (size_t i = 0; i < n; i += store_elems) {
      const size_t m = std::min(store_elems, n - i);
      const size_t in_tile = i * elem_size;
      kernel.combine(stored.data(), partial + in_tile, final_input + in_tile, m);
      if (kernel.finalize != nullptr) kernel.finalize(stored.data(), m, nranks);
      for (size_t k = 0; k < outputs.size(); ++k) {
        store(outputs[k] + at + in_tile, stored.data(), m * elem_size, streams[k]);
      }
    }
    done += n;
  }
  if (streaming) streamingFence();
  return Status::ok();
}

Status directCopy(std::byte* dst, const DirectSource& source, size_t bytes, bool streaming) {
  if (bytes == 0 || dst == source.local) return Status::ok();
  if (!source.isLocal()) return source.memory->read(source.peer, source.remote, dst, bytes);
  store(dst, source.local, bytes, streaming);
  if (streaming) streamingFence();
  return Status::ok();
}

}  // namespace psdp::coll
