// One training step of a registered state, chunk by chunk (docs/chunk-engine.md): the framework reports
// gradients ready, takes reduced chunks, updates their owned pieces and marks them updated; the step posts
// the collectives of each transfer (a chunk, or a few grouped, or a whole space in bulk mode:
// engine/chunk_packing.h) on the state's teams as its schedule (engine/chunk_schedule.h, over transfers)
// allows, packing and unpacking through pooled buffers. It records each stage's times (engine/step_timeline.h)
// and, with a norm policy, computes the global gradient norm as chunks are reduced (engine/grad_norm.h).
//
// Progress: collectives move in the context's driver (its thread, or whichever thread waits). The step
// itself moves, posting what the schedule allows and finishing stages that completed (delivering the
// reduced owned piece into the gradient buffers or the gradient shard, unpacking gathered parameters),
// inside its calls: every call looks, and the waiting calls (nextChunk, gradNorm, waitParameters, end) look
// whenever a collective completes. So a framework that polls nextChunk in its update loop keeps the
// pipeline going.
//
// Threading: every call may come from any thread (a backward hook reporting gradients on an autograd
// thread while the training thread waits in nextChunk): the calls are serialised, and the waiting ones let
// the others in while they wait.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "engine/chunk_packing.h"
#include "engine/chunk_schedule.h"
#include "engine/grad_norm.h"
#include "engine/gradient_readiness.h"
#include "engine/pack_pool.h"
#include "engine/step_timeline.h"
#include "engine/team.h"
#include "shard/shard_plan.h"

namespace psdp::engine {

// What to do at backwardDone() with gradients never reported.
enum class UnusedGradients : uint8_t {
  kError,  // the step fails, naming the first buffer and range
  kZero,   // zeros are written into those ranges of the gradient buffers, which then count as ready
};

// The dtype of float16 and bfloat16 gradients' partial sums (psdp_partial_sums_t).
enum class PartialSums : uint8_t {
  kDefault,        // float32 when the state has a gradient shard, else the gradients' dtype (StateEngine resolves it)
  kFloat32,        // widened into float32 pack buffers and reduced in float32
  kGradientDtype,  // reduced in the gradients' dtype (each combine in float32, rounded)
};

struct StepConfig {
  size_t reduce_window = 2;  // transfers in their reductions at once
  size_t gather_window = 2;  // transfers in their gathers at once
  // Consecutive chunks of a space whose collectives run together; 0: every chunk of a space in one (bulk
  // mode: whole-space collectives, every update after every reduction, as frameworks without pipelining do).
  size_t chunks_per_transfer = 1;
  bool reduce_forward = false;   // reductions in chunk order; default: backward (the last chunk first)
  bool gather_backward = false;  // gathers from the last chunk; default: forward
  psdp_op_t op = PSDP_SUM;       // PSDP_SUM or PSDP_AVG of the gradients over the ranks
  UnusedGradients unused = UnusedGradients::kError;
  GradNormPolicy grad_norm = GradNormPolicy::kNone;
  PartialSums partial_sums = PartialSums::kDefault;
  // The fragment of the ring transfers of the step's collectives (Collectives::overrideFragmentBytes); 0:
  // the collectives' own.
  size_t fragment_bytes = 0;
  // Online tuning (engine/online_tuner.h): the state's engine replaces the windows (tune_window), the
  // grouping (tune_grouping) and the fragment (tune_fragment), those the caller left to psdp, with its
  // tuner's; the fields above are where it starts.
  bool online_tuning = false;
  bool tune_window = false;
  bool tune_grouping = false;
  bool tune_fragment = false;
};

// Everything a step runs on, owned by the state's engine (engine/state_engine.h), which outlives its steps.
struct StepResources {
  const shard::ShardPlan* plan = nullptr;
  int rank = 0;
  const std::vector<void*>* pointers = nullptr;  // this rank's registered buffers
  const GradNorm* previous_norm = nullptr;       // the last one a step computed (deferred policy)
  // By stage kind (engine::Stage); the replica teams exist only with replicas (G < W).
  Team* teams[kStageKinds] = {};
  PackPool* pool = nullptr;
};

class Step {
 public:
  // REQUIRES: config checked (StateEngine::begin does), resources valid for the step's life.
  Step(const StepResources& resources, const StepConfig& config, uint64_t id);
  ~Step();
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

  uint64_t id() const { return id_; }

  // Gradients [offset, offset + count) of `buffer` (a gradient, or its parameter) are final for this step.
  // Errors: as GradientReadiness::report; the step's failure.
  Status gradientsReady(int buffer, uint64_t offset, uint64_t count);
  // Every gradient not reported yet is ready (the framework's "all"). Errors: invalid usage after
  // backwardDone(); the step's failure.
  Status allGradientsReady();
  // Every gradient of the step has been reported, or never will be: those not reported are handled by the
  // unused policy. Errors: invalid usage naming the first unreported buffer and range (kError: the step is
  // then failed, and so are its teams, so that the other ranks learn it at once).
  Status backwardDone();

  // The next reduced chunk not yet handed out, waiting for one until `until`. nullopt: none became ready in
  // time, or every chunk has been handed out already (allHandedOut()). Errors: the step's failure (a
  // collective's error: remote, timeout, mismatch).
  Result<std::optional<uint32_t>> nextChunk(const Deadline& until);
  size_t handedOut() const;
  // Whether the step has failed (and so can only be dropped).
  bool failed() const;
  // The framework has written the chunk's owned parameters: its gathers may start. Errors: invalid usage (not
  // handed out, or updated already).
  Status chunkUpdated(uint32_t chunk);
  // Waits until the parameters [offset, offset + count) of `buffer` are gathered, or `until` (timeout).
  // Errors: invalid argument (the range), invalid usage (a chunk it needs cannot be gathered before the
  // framework updates a chunk: names both), timeout, the step's failure.
  Status waitParameters(int buffer, uint64_t offset, uint64_t count, const Deadline& until);
  // Waits until every chunk is gathered, then ends the step. Errors: invalid usage (chunks not updated yet:
  // names the first), timeout, the step's failure.
  Status end(const Deadline& until);

  // A chunk's own state: its transfer's, except that a chunk of a reduced transfer is kUpdated once the
  // framework has updated it (its transfer gathers when all of them are).
  ChunkState chunkState(uint32_t chunk) const;
  size_t chunks() const { return transfer_of_.size(); }

  // What its chunks went through so far (engine/step_timeline.h); taken when the step is dropped.
  StepTimeline takeTimeline();

  // The gradient norm the policy gives this step: kGlobal, this step's, waiting for every chunk's reduction
  // until `until`; kDeferred, the previous step's at once. Errors: invalid usage (policy none), timeout, the
  // step's failure.
  Result<GradNorm> gradNorm(const Deadline& until);
  // This step's norm, once computed (for the state engine to keep for the next step).
  std::optional<GradNorm> computedNorm() const;

 private:
  struct InFlight {
    uint32_t transfer;  // kNormTransfer: the gradient norm's all-gather
    Stage stage;        // its team
    std::shared_ptr<coll::Request> request;
  };
  static constexpr uint32_t kNormTransfer = UINT32_MAX;

  // Finishes completed stages and posts what the schedule allows. Errors: the first failed collective.
  Status pump();
  Status finish(const InFlight& done);
  // The owned pieces of the transfer's chunks are reduced: their partials of the norm; the norm's first
  // all-gather once every chunk is in.
  Status addToNorm(uint32_t transfer);
  Status postNorm();
  bool normPending() const { return norm_ && !norm_done_; }
  Status post(const Post& post);
  // Waits until some collective in flight completes or `until`, without the lock meanwhile; false when
  // nothing is in flight.
  bool waitForAny(std::unique_lock<std::mutex>& lock, const Deadline& until);
  bool allHandedOut() const { return handed_out_ == transfer_of_.size(); }
  // `chunks` have had all their gradients reported: their transfers become ready once all of theirs have.
  Status chunksReady(const std::vector<uint32_t>& chunks);
  Status fail(Status status);
  std::byte* packOf(uint32_t transfer) const { return pack_of_[transfer]; }
  // The buffer a transfer's reduce (or gather) phase runs on: taken from the pool and packed when the phase
  // begins, or the user's buffer itself when it runs in place.
  Result<std::byte*> beginPhase(uint32_t transfer, bool gather);
  std::byte* bufferOf(uint32_t transfer, bool gather) const;
  bool runsInPlace(uint32_t transfer, bool gather) const {
    return gather ? in_place_[transfer].has_value() : reduces_in_place_[transfer] != 0;
  }

  mutable std::mutex mutex_;  // guards everything below
  const StepResources resources_;
  const StepConfig config_;
  const uint64_t id_;
  const std::vector<Transfer> transfers_;
  std::vector<uint32_t> transfer_of_;  // per chunk
  ChunkPacking packing_;
  ChunkSchedule schedule_;  // over transfers
  GradientReadiness readiness_;
  std::vector<InFlight> in_flight_;
  std::vector<std::byte*> pack_of_;  // per transfer: its pack buffer while it is in a phase (pooled ones only)
  std::vector<std::optional<InPlace>> in_place_;       // per transfer: where it runs without packing, if it can
  std::vector<uint8_t> reduces_in_place_;              // per transfer: its reductions too (not widened)
  std::vector<size_t> ready_chunks_;                   // per transfer: chunks whose gradients are all reported
  std::vector<size_t> updated_chunks_;                 // per transfer: chunks the framework has updated
  std::vector<uint8_t> chunk_handed_, chunk_updated_;  // per chunk
  std::vector<uint64_t> handed_ns_;                    // per chunk: when it was handed out
  std::deque<uint32_t> handout_;  // reduced chunks not yet handed out, in the order their transfers reduced
  size_t handed_out_ = 0;
  bool backward_done_ = false;
  Status failure_;
  std::vector<uint32_t> completed_;  // scratch for readiness reports
  StepTimeline timeline_;
  std::unique_ptr<GradNormReduction> norm_;  // null with policy none
  bool norm_done_ = false;
};

}  // namespace psdp::engine
