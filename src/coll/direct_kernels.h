// The local work of a direct operation (coll/direct_phase.h), once the other ranks' buffers are addressable
// from this process: each rank reduces or copies its share straight out of their buffers and into them,
// with no copy through staging. Reductions go a tile at a time: the tile (4 KiB, in this core's cache)
// takes the combined inputs, then is stored to every destination. When the operation's data exceeds the
// last-level cache, stores to destinations that were not just read are non-temporal (`streaming`), so
// that memory sees each input read once and each output written once, with no read-for-ownership. The
// tile size was measured (psdp-perf -R 1, 2 ranks): 2-4 KiB beat 8 and 32 KiB by up to 40% for
// reduce-scatter, where reading a whole large tile and then storing it leaves memory idle in turns.
#pragma once

#include <cstddef>
#include <span>

#include "coll/reduce_kernels.h"

namespace psdp::coll {

inline constexpr size_t kDirectTileBytes = size_t{4} << 10;
// All-reduce stores to every rank's output.
inline constexpr size_t kMaxDirectOutputs = 4096;
// Operations whose buffer (per rank) is at least this large stream their results. Measured with psdp-perf
// -R 1 on 2 ranks (32 MiB of L3): at 4 MiB plain stores are up to 30% faster, since everything still fits
// the cache; at 16 MiB streaming stores are 40-60% faster out of place.
inline constexpr size_t kDirectStreamingMinBytes = size_t{8} << 20;

// outputs[k][0, count) = inputs[0] op inputs[1] op ... (in rank order), finalized for `nranks`, for every
// output k. Inputs and outputs are `count` elements of `elem_size` bytes; an output may be exactly an
// input (in place), no other overlap. `tile` holds kDirectTileBytes, 64-byte aligned. Streaming stores
// are fenced before it returns. REQUIRES: inputs.size() >= 2; outputs.size() <= kMaxDirectOutputs;
// !kernel.scalesInput().
void directReduce(const ReduceKernel& kernel, std::span<const std::byte* const> inputs,
                  std::span<std::byte* const> outputs, size_t count, size_t elem_size, int nranks, std::byte* tile,
                  bool streaming);

// memcpy, with non-temporal stores (fenced) if `streaming`; nothing when dst == src.
void directCopy(std::byte* dst, const std::byte* src, size_t bytes, bool streaming);

}  // namespace psdp::coll
