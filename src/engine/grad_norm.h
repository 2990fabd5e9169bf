// The global gradient norm of a step, for clipping and for loss scaling's overflow check: psdp computes it
// as a reduction of data it reduces anyway, never as an update. Each rank sums the squares of its owned
// piece of each chunk once the chunk is reduced (float64, a partial per chunk), and once every chunk is
// reduced the ranks combine their partials: an all-gather of (sum of squares, non-finite count) over the
// shard group, and at level world over the replica group too; every rank then adds the same values in the
// same order (chunk order, then member and replica order), so every rank, replicas included, gets the same
// bits. At level group the replicas own the same pieces with the same values, so the shard group's sum is
// the whole norm.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "engine/team.h"

namespace psdp::engine {

enum class GradNormPolicy : uint8_t {
  kNone,      // not computed
  kGlobal,    // this step's, before any chunk is handed out
  kDeferred,  // computed during the step for the next; the step hands out the previous one
};

struct GradNorm {
  double sq_norm = 0;      // sum of the squares of every element of the reduced gradient; inf or NaN if any is
  bool nonfinite = false;  // some element is inf or NaN
  bool available = false;  // false: none computed yet (a deferred policy's first step)
  uint64_t step = 0;       // the step whose gradients it is of
};

// Sum of the squares of `count` elements of `dtype` (a floating type; integers are converted), in float64;
// *nonfinite is set when an element is inf or NaN.
double sumOfSquares(const std::byte* data, psdp_dtype_t dtype, size_t count, bool* nonfinite);

// One step's combination of partials over its teams.
class GradNormReduction {
 public:
  // group, replicas: the shard group's reduce team and the replica group's (which may not exist);
  // level_world: the replicas own different pieces and are combined too.
  GradNormReduction(size_t chunks, Team* group, Team* replicas, bool level_world, uint64_t step);

  // The chunk's owned piece is reduced; `sq` and `nonfinite` are its partial.
  void addChunk(size_t chunk, double sq, bool nonfinite);
  bool allChunks() const { return chunks_done_ == partial_.size(); }
  size_t chunksDone() const { return chunks_done_; }

  // The next all-gather to post (on group, then on replicas), or null when none is left. Errors: a post's.
  Result<std::shared_ptr<coll::Request>> postNext();
  // Which team the request of postNext runs on.
  Team* nextTeam() const;
  // The posted all-gather completed: true once the norm is known.
  bool gathered();
  const GradNorm& result() const { return result_; }

 private:
  std::vector<double> partial_;
  std::vector<uint8_t> nonfinite_;
  size_t chunks_done_ = 0;
  Team* group_;
  Team* replicas_;
  int phase_ = 0;  // 0: nothing posted; 1: the group's gather; 2: the replicas' gather
  std::vector<double> mine_, group_values_, all_values_;
  GradNorm result_;
};

}  // namespace psdp::engine
