// The local work of a direct operation (coll/direct_phase.h): each rank reduces or copies its share
// straight out of the other ranks' buffers, with no copy through staging. A buffer of another rank is
// either addressable here (a rank of this process, or shareable memory mapped here) or read out of its
// process (transport/peer_memory.h: CMA), one tile at a time into this core's cache.
//
// Reductions go a tile at a time. A fetch tile (kDirectFetchTileBytes) is what one CMA read of a peer brings
// into this core's cache; with every input addressable there is no fetch. The results are combined and
// stored a store tile at a time. When the operation's data exceeds the last-level cache, stores to
// destinations that were not just read are non-temporal (`streaming`), so that memory sees each input read
// once and each output written once, with no read-for-ownership; such results go 256 bytes at a time
// (kDirectStreamTileBytes), so that the loads of the inputs and the stores of the results interleave in the
// core's window and memory is never idle in turns. Results that stay in cache go 4 KiB at a time
// (kDirectCacheTileBytes): at cache speed the calls per tile are what costs. Tile sizes were measured with
// psdp-perf -R 1 on 2 ranks, float32 sum: at 16-256 MiB (streaming), 256-byte tiles beat 4 KiB ones by
// 10-30% out of place (reduce-scatter 5.4-7.2 against 4.6-5.5 GB/s, all-reduce 8.5-9.9 against 7.1-8.0),
// and 4 KiB had beaten 32 KiB by up to 40%; at 1-4 MiB (cached), 4 KiB tiles beat 256-byte ones by 1.5-2.4x
// in reduce-scatter (9.4-9.9 against 4.1-5.4 GB/s out of place), and 1 KiB and 16 KiB ones in most columns.
// With CMA, 1 MiB fetch tiles beat 256 KiB ones by 5-35% (reduce-scatter 4.6-5.8 against 3.5-4.4 GB/s,
// all-reduce 5.5-6.5 against 5.1-5.5), 4 MiB ones were no better, and 256 KiB had beaten 64 KiB: each CMA
// call pins and copies the other process's pages in small batches, so larger calls amortise the system call
// (cross_memory_bench: a CMA read moves 35-55% of what memcpy moves here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/status.h"
#include "coll/reduce_kernels.h"
#include "transport/peer_memory.h"

namespace psdp::coll {

inline constexpr size_t kDirectStreamTileBytes = 256;
inline constexpr size_t kDirectCacheTileBytes = size_t{4} << 10;
inline constexpr size_t kDirectFetchTileBytes = size_t{1} << 20;
// A direct all-reduce's blocks start on multiples of this many bytes (a cache line): see
// DirectPhase::allReduceBlocks.
inline constexpr size_t kDirectBlockAlignBytes = 64;
// All-reduce stores to every rank's output.
inline constexpr size_t kMaxDirectOutputs = 4096;
// Which sizes read with CMA and stream their results is the algorithm table's to say (coll/algorithm_table.h,
// where the measurements are). This is the working set from which the direct operations in flight on a team
// stream theirs whatever each one's size: many in flight walk through more memory than the cache holds
// (psdp-perf -R 1, 2 ranks, 32 MiB of L3: 64 all-reduces of 1 MiB in flight, -m 64, ran 1.2-1.4x faster
// out of place streaming).
inline constexpr size_t kDirectStreamingMinBytes = size_t{8} << 20;

// One rank's buffer as this process reads it: in place at `local`, or read from `remote` in the memory of
// `peer` (a rank of `memory`).
struct DirectSource {
  const std::byte* local = nullptr;
  const transport::PeerMemory* memory = nullptr;
  int peer = -1;
  uint64_t remote = 0;

  bool isLocal() const { return local != nullptr; }
  DirectSource at(size_t offset) const {
    return isLocal() ? DirectSource{local + offset} : DirectSource{nullptr, memory, peer, remote + offset};
  }
};

// Two fetch tiles of kDirectFetchTileBytes each, 64-byte aligned: the running result and a CMA read.
struct DirectTiles {
  std::byte* result = nullptr;
  std::byte* read = nullptr;
};

// outputs[k][0, count) = inputs[0] op inputs[1] op ... (in rank order), finalized for `nranks`, for every
// output k. Inputs and outputs are `count` elements of `elem_size` bytes; an output may be exactly a local
// input (in place), no other overlap. Streaming stores are fenced before it returns. Errors: those of
// PeerMemory::read (a peer gone, a read refused). REQUIRES: inputs.size() >= 2; outputs.size() <= kMaxDirectOutputs;
// !kernel.scalesInput().
Status directReduce(const ReduceKernel& kernel, std::span<const DirectSource> inputs,
                    std::span<std::byte* const> outputs, size_t count, size_t elem_size, int nranks,
                    const DirectTiles& tiles, bool streaming);

// Copies `bytes` of `source` to dst: memcpy (non-temporal and fenced if `streaming`), or a CMA read;
// nothing when dst is the source itself. Errors: those of PeerMemory::read.
Status directCopy(std::byte* dst, const DirectSource& source, size_t bytes, bool streaming);

}  // namespace psdp::coll
