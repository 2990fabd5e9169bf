// Where a chunk's elements go in the buffers its collectives run on, and back: the one place where the
// plan's pieces (unequal, the larger last, spanning several user buffers) meet the collectives' equal
// blocks.
//
// A chunk's collectives run on one pack buffer of G blocks of `block` elements. Level group: block g is
// group piece g, zero-padded to padded_group_piece. Level world: block g is the R world pieces of group piece
// g, world piece (g, k) at k * padded_world_piece, each zero-padded. Every collective then runs in place:
//   reduce in group     reduce-scatter over the shard team, block `member` of the buffer as output;
//   reduce across       level group: all-reduce of that block over the replica team; level world:
//   replicas            reduce-scatter of it, world piece `replica` of the block as output;
//   gather across       level world: all-gather of the world pieces into the block;
//   replicas
//   gather in group     all-gather of the blocks.
// So a group piece is never repacked between the group and the replica stages, and the collectives'
// block split (equal counts) never sees the pieces' unequal sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shard/shard_plan.h"

namespace psdp::engine {

// A run of a chunk's elements: `count` elements from chunk-relative element `chunk_offset`, at element
// `packed` of the pack buffer.
struct PackedSegment {
  uint64_t chunk_offset = 0;
  uint64_t packed = 0;
  uint64_t count = 0;
};

class ChunkPacking {
 public:
  // pointers: this rank's registered buffers, by plan buffer index. REQUIRES: the plan's buffers are host
  // memory; pointers outlive the packing.
  ChunkPacking(const shard::ShardPlan& plan, int rank, const std::vector<void*>& pointers);

  // Elements of one block, and of the pack buffer (G blocks), of `chunk`.
  uint64_t blockElems(size_t chunk) const;
  uint64_t packElems(size_t chunk) const { return blockElems(chunk) * static_cast<uint64_t>(group_); }
  // The largest pack buffer of any chunk, in bytes, for elements of `elem_bytes`.
  size_t maxPackBytes(size_t elem_bytes) const;

  // This rank's place: member of its shard group, replica of its replica group.
  int member() const { return member_; }
  int replica() const { return replica_; }

  // Every piece of `chunk` at its place in the pack buffer (level group: G segments, level world: G * R).
  std::vector<PackedSegment> segments(size_t chunk) const;
  // The segment this rank owns.
  PackedSegment ownedSegment(size_t chunk) const;

  // Copies `chunk`'s gradients into `pack` (grad dtype), zeroing the padding.
  void packGradients(size_t chunk, std::byte* pack) const;
  // Copies the reduced owned piece from `pack` into this rank's gradient buffers at its owned ranges.
  void storeOwnedGradients(size_t chunk, const std::byte* pack) const;
  // Copies this rank's owned parameters into their place in `pack` (param dtype), zeroing that segment's
  // padding.
  void packOwnedParameters(size_t chunk, std::byte* pack) const;
  // Copies every piece of the gathered `pack` into the parameter buffers.
  void unpackParameters(size_t chunk, const std::byte* pack) const;

 private:
  // Calls fn(buffer pointer base of parameter p's or its gradient's buffer, offset in it, n, packed offset)
  // for the elements [chunk_offset, +count) of `chunk`, split where a buffer ends.
  template <typename Fn>
  void forEachRun(size_t chunk, const PackedSegment& segment, Fn fn) const;

  const shard::ShardPlan& plan_;
  const std::vector<void*>& pointers_;
  std::vector<int> gradient_of_;  // per buffer: the gradient paired with a parameter, or -1
  int group_;
  int replicas_;
  int member_;
  int replica_;
  bool world_level_;
};

}  // namespace psdp::engine
