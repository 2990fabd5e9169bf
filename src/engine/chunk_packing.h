// Where a transfer's elements go in the buffer its collectives run on, and back: the one place where the
// plan's pieces (unequal, the larger last, spanning several user buffers) meet the collectives' equal
// blocks.
//
// A transfer is one or more consecutive chunks of one space whose collectives run together (one chunk by
// default; every chunk of the space in bulk mode; a few small ones grouped). Its collectives run on one pack
// buffer of G blocks of B elements:
//   level group: block g holds group piece g of each of its chunks, one after the other, each zero-padded to
//                the chunk's padded_group_piece (B is their sum);
//   level world: block g holds R parts of P elements, part k holding world piece (g, k) of each chunk, each
//                zero-padded to the chunk's padded_world_piece (P is their sum, B = R * P).
// Every collective then runs in place on the same buffer:
//   reduce in group          reduce-scatter over the shard team, block `member` as output;
//   reduce across replicas   level group: all-reduce of that block; level world: reduce-scatter of it over
//                            the replica team, part `replica` as output;
//   gather across replicas   level world: all-gather of the parts into the block;
//   gather in group          all-gather of the blocks.
// So a group piece is never repacked between the group and the replica stages, and no collective sees the
// pieces' unequal sizes.
//
// Mixed precision. The reductions run in the gradients' dtype, or, with float32 partial sums, float16 and
// bfloat16 gradients are widened into a float32 pack buffer (never in place then) so that every partial sum
// is float32. The reduced owned pieces go back into the gradient buffers (rounded when widened), or, when the
// state registers a gradient shard, into it in float32 at the rank's shard-file offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "shard/shard_plan.h"

namespace psdp::engine {

struct Transfer {
  std::vector<uint32_t> chunks;  // consecutive chunks of one space
  uint64_t block = 0;            // B
  uint64_t part = 0;             // P: the replica stages' count per rank (level world); B at level group
  std::vector<uint64_t> offset;  // per chunk of it: where its pieces start within a part (world) or block (group)
};

// The plan's chunks grouped into transfers of `chunks_per_transfer` consecutive chunks of one space (0: every
// chunk of a space in one transfer), in chunk order.
std::vector<Transfer> groupChunks(const shard::ShardPlan& plan, size_t chunks_per_transfer);

// A run of a chunk's elements: `count` elements from chunk-relative element `chunk_offset`, at element
// `packed` of the transfer's pack buffer.
struct PackedSegment {
  uint32_t chunk = 0;
  uint64_t chunk_offset = 0;
  uint64_t packed = 0;
  uint64_t count = 0;
};

// A transfer that needs no packing: one chunk inside one parameter buffer (and its gradient) whose pieces are
// all exactly their padded size, so that the chunk's own elements are the pack buffer's layout. Its
// collectives run in place on the user's buffers: the reduction leaves the owned piece reduced where it
// belongs, the gather reads the owned parameters where the framework wrote them.
struct InPlace {
  std::byte* gradients = nullptr;   // the chunk's first gradient element
  std::byte* parameters = nullptr;  // its first parameter element
};

// Where a chunk's reduced owned gradient is, for the gradient norm: runs of `count` elements of `dtype`.
struct GradientRun {
  const std::byte* data = nullptr;
  psdp_dtype_t dtype = PSDP_FLOAT32;
  uint64_t count = 0;
};

class ChunkPacking {
 public:
  // pointers: this rank's registered buffers, by plan buffer index. float32_partials: float16 and bfloat16
  // gradients are reduced in float32. REQUIRES: the plan's buffers are host memory; plan, transfers and
  // pointers outlive the packing.
  ChunkPacking(const shard::ShardPlan& plan, const std::vector<Transfer>& transfers, int rank,
               const std::vector<void*>& pointers, bool float32_partials);

  const Transfer& transfer(size_t t) const { return transfers_[t]; }
  // Elements of the pack buffer of transfer t (G blocks).
  uint64_t packElems(size_t t) const { return transfers_[t].block * static_cast<uint64_t>(group_); }
  // The dtype of transfer t's gradients, and the one its reductions run in.
  psdp_dtype_t gradDtype(size_t t) const;
  psdp_dtype_t reduceDtype(size_t t) const;
  psdp_dtype_t paramDtype(size_t t) const;
  // Whether transfer t's reductions run in place (inPlace, in the gradients' own dtype).
  bool reducesInPlace(size_t t) const;
  // How many transfers reduce (or gather) through a pack buffer, and the largest such buffer in bytes (0 when
  // every transfer runs in place, which needs none).
  size_t packedReductions() const;
  size_t packedGathers() const;
  size_t maxReducePackBytes() const;
  size_t maxGatherPackBytes() const;

  // This rank's place: member of its shard group, replica of its replica group.
  int member() const { return member_; }
  int replica() const { return replica_; }

  // Where transfer t runs in place, if it can (see InPlace).
  std::optional<InPlace> inPlace(size_t t) const;

  // Every piece of transfer t's chunks at its place in the pack buffer.
  std::vector<PackedSegment> segments(size_t t) const;
  // The pieces this rank owns, one per chunk.
  std::vector<PackedSegment> ownedSegments(size_t t) const;

  // Copies the transfer's gradients into `pack` (in the reduce dtype), zeroing the padding.
  void packGradients(size_t t, std::byte* pack) const;
  // Delivers the reduced owned pieces of `reduced` (the transfer's pack buffer, or its gradients when it
  // reduces in place) into the gradient shard, or into this rank's gradient buffers at its owned ranges.
  void deliverOwnedGradients(size_t t, const std::byte* reduced) const;
  // Where chunk `chunk`'s reduced owned gradient is once delivered.
  std::vector<GradientRun> ownedGradients(uint32_t chunk) const;
  // Copies this rank's owned parameters into their place in `pack` (param dtype), zeroing that place first.
  void packOwnedParameters(size_t t, std::byte* pack) const;
  // Copies every piece of the gathered `pack` into the parameter buffers.
  void unpackParameters(size_t t, const std::byte* pack) const;

 private:
  // The segments of chunk transfers_[t].chunks[i]; owned_only: this rank's alone.
  void appendSegments(size_t t, size_t i, bool owned_only, std::vector<PackedSegment>& out) const;
  // Calls fn(parameter buffer, offset in it, n, packed offset) for a segment, split where a buffer ends.
  template <typename Fn>
  void forEachRun(const PackedSegment& segment, Fn fn) const;
  const shard::ShardPlan& plan_;
  const std::vector<Transfer>& transfers_;
  const std::vector<void*>& pointers_;
  std::vector<int> gradient_of_;        // per buffer: the gradient paired with a parameter, or -1
  float* shard_ = nullptr;              // the gradient shard, if the state registers one
  std::vector<uint64_t> shard_offset_;  // per chunk, with a shard: where its owned elements start in it
  bool float32_partials_;
  int rank_;
  int group_;
  int replicas_;
  int member_;
  int replica_;
  bool world_level_;
};

}  // namespace psdp::engine
