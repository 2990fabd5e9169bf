// The shard plan: a deterministic pure function of the registered buffers and the plan configuration
// (no communication, no addresses), so that every rank computes the same plan on every run.
//
// Flat spaces. The parameters are laid end to end, in registration order, in one flat element space per
// (parameter dtype, memory kind, and the dtype and memory kind of their gradients when gradients are
// registered). A gradient shares its parameter's offsets, so that both the reduce-scatter of gradients and
// the all-gather of parameters of a chunk are one collective on one dtype each.
//
// Units and chunks. Alignment and chunk size are in bytes; pieces are whole elements. For a space whose
// dtypes are s_min <= s_max bytes wide (one dtype: s_min == s_max), the alignment unit is
// u = align_bytes / s_min elements: a piece boundary k*u is then k*align_bytes bytes into the flat buffer
// of the smaller dtype and a multiple of that into the wider one (dtype sizes are powers of two and
// checkPlanInput makes align_bytes >= s_max). A chunk holds chunk_bytes / s_max elements, so neither
// dtype's collective exceeds chunk_bytes, rounded down to a multiple of L*u, where L = G at level group and
// W at level world, and at least L*u: every full chunk then splits into L equal aligned pieces. The last
// chunk of a space holds the rest. Chunks are numbered in registration order: by the buffer, then the
// offset, of their first element.
//
// Pieces. Each chunk is split into G group pieces, one per member of a shard group, and at level world
// each group piece into R world pieces, one per replica (piece_split.h): boundaries fall on multiples of u
// from the chunk's start, and within a chunk the pieces' element counts differ by at most u. A rank at
// (replica k, member g) of the rank layout owns group piece g (level group, replicated across the R
// replica groups) or world piece (g, k) (level world).
//
// Padding. A chunk's collectives move equal counts per rank: padded_group_piece (and padded_world_piece)
// is the whole units of the largest piece, rounded up to pad_bytes / s_min elements when pad_bytes is set.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "shard/piece_split.h"
#include "shard/plan_input.h"
#include "shard/rank_layout.h"

namespace psdp::shard {

struct Space {
  MemoryKind memory = MemoryKind::kHost;
  psdp_dtype_t dtype = PSDP_FLOAT32;       // of the parameters
  std::optional<psdp_dtype_t> grad_dtype;  // of the gradients, when gradients are registered
  std::optional<MemoryKind> grad_memory;
  uint64_t unit = 1;             // u, elements
  uint64_t chunk_count = 1;      // elements of a full chunk
  std::vector<int> buffers;      // the parameters, in registration order
  std::vector<uint64_t> starts;  // offset of each parameter in the space, then the total
  std::vector<size_t> chunks;    // the space's chunks (indices into ShardPlan::chunks()), in order
  uint64_t size() const { return starts.back(); }
};

struct Chunk {
  int space = 0;
  uint64_t begin = 0;  // element offset in the space
  uint64_t count = 0;
  uint64_t padded_group_piece = 0;  // per-member count of the chunk's collectives within a shard group
  uint64_t padded_world_piece = 0;  // per-rank count at level world; equals padded_group_piece at level group
};

// Elements [offset, offset + count) of registered buffer `buffer` (an index into the buffer list).
struct OwnedRange {
  int buffer = 0;
  uint64_t offset = 0;
  uint64_t count = 0;
  bool operator==(const OwnedRange&) const = default;
};

// Where a (buffer, offset) lies: its chunk, and the offset from the chunk's first element.
struct ChunkPosition {
  size_t chunk = 0;
  uint64_t offset = 0;
};

class ShardPlan {
 public:
  // Checks the input (checkPlanInput) and builds the plan.
  static Result<ShardPlan> build(std::span<const BufferDesc> buffers, const PlanConfig& config);

  const std::vector<BufferDesc>& buffers() const { return buffers_; }
  const PlanConfig& config() const { return config_; }
  const RankLayout& layout() const { return layout_; }
  const std::vector<Space>& spaces() const { return spaces_; }
  const std::vector<Chunk>& chunks() const { return chunks_; }

  // How chunk `chunk` splits into pieces.
  PieceSplit pieceSplit(size_t chunk) const;
  // The piece of chunk `chunk` that `rank` owns at the plan's level, relative to the chunk's start.
  // REQUIRES (for every query): rank in [0, W), chunk < chunks().size().
  Extent ownedPiece(int rank, size_t chunk) const;
  // Its element count.
  uint64_t ownedCount(int rank, size_t chunk) const { return ownedPiece(rank, chunk).count; }
  // Elements `rank` owns over all chunks: the size of its optimizer state (per state buffer) and of its
  // reduced gradients.
  uint64_t ownedCount(int rank) const;
  // The (buffer, offset, count) ranges of the owned piece: parameter buffers, ascending, split where a
  // buffer ends. A gradient's ranges are its parameter's (gradientOf).
  std::vector<OwnedRange> ownedRanges(int rank, size_t chunk) const;
  // The ranges of every chunk, in chunk order: the layout of the rank's shard file.
  std::vector<OwnedRange> ownedRanges(int rank) const;

  // Where chunk `chunk`'s owned elements start in `rank`'s shard file (the sum of its owned counts of the
  // chunks before): the index of its first element in the optimizer state and the gradient shard.
  uint64_t shardOffset(int rank, size_t chunk) const;

  // OK if every optimizer-state or gradient-shard buffer holds exactly ownedCount(rank) elements, the size
  // the plan gives it; invalid argument naming the first that does not. checkPlanInput cannot check it: it differs per
  // rank.
  Status checkShardSizedBuffers(int rank) const;

  // The chunk that covers element `offset` of parameter or gradient `buffer`. Errors: invalid argument for
  // a buffer index out of range, an optimizer-state or gradient-shard buffer, or an offset past the buffer's end.
  Result<ChunkPosition> findChunk(int buffer, uint64_t offset) const;
  // The parameter a gradient pairs with (itself for a parameter); -1 for optimizer state and the gradient shard.
  int parameterOf(int buffer) const { return pair_[buffer]; }
  // The space of a parameter and its offset there.
  int spaceOf(int param) const { return space_of_[param]; }
  uint64_t spaceOffset(int param) const;

  // A 64-bit digest of everything the plan is a function of (plan_hash.h); ranks compare it to check that
  // they agree.
  uint64_t hash() const { return hash_; }

 private:
  ShardPlan(std::vector<BufferDesc> buffers, PlanConfig config);
  void buildSpaces();
  Status buildChunks();

  std::vector<BufferDesc> buffers_;
  PlanConfig config_;
  RankLayout layout_;
  std::vector<Space> spaces_;
  std::vector<Chunk> chunks_;
  std::vector<int> pair_;      // per buffer: its parameter, or -1
  std::vector<int> space_of_;  // per buffer: the space of its parameter, or -1
  std::vector<size_t> slot_;   // per parameter buffer: its index in its space's `buffers`
  uint64_t hash_ = 0;
};

}  // namespace psdp::shard
