// The local work of a direct operation (coll/direct_phase.h), once the other ranks' buffers are addressable
// from this process: each rank reduces or copies its share straight out of their buffers and into them,
// with no copy through staging. Reductions go a tile at a time: the tile (a few KiB, in this core's cache)
// takes the combined inputs, then is stored to every destination with non-temporal stores, so that memory
// sees each input read once and each output written once, with no read-for-ownership.
#pragma once

#include <cstddef>
#include <span>

#include "coll/reduce_kernels.h"

namespace psdp::coll {

inline constexpr size_t kDirectTileBytes = size_t{4} << 10;

// outputs[k][0, count) = inputs[0] op inputs[1] op ... (in rank order), finalized for `nranks`, for every
// output k. Inputs and outputs are `count` elements of `elem_size` bytes; an output may be exactly an
// input (in place), no other overlap. `tile` holds kDirectTileBytes, 64-byte aligned. Stores are fenced
// before it returns. REQUIRES: inputs.size() >= 2; !kernel.scalesInput().
void directReduce(const ReduceKernel& kernel, std::span<const std::byte* const> inputs,
                  std::span<std::byte* const> outputs, size_t count, size_t elem_size, int nranks, std::byte* tile);

// memcpy with non-temporal stores at any size, fenced; nothing when dst == src.
void directCopy(std::byte* dst, const std::byte* src, size_t bytes);

}  // namespace psdp::coll
