// The order in which one rank posts the collectives of a sharded step, chunk by chunk: the part of the chunk
// engine that decides, from what this rank knows (which chunks' gradients are ready, which stages have
// completed, which chunks the framework has updated), which collective to post next. Pure: no memory, no
// transport; the engine feeds it events and posts what it says.
//
// The rule (docs/chunk-engine.md has the argument that it never deadlocks):
//   1. Every stage kind runs on a team of its own: the reductions inside the shard group, across the
//      replica group, the gathers across the replica group and inside the shard group. A team's collectives
//      must be posted in the same order on every member; with one team per stage kind, that order is the
//      only constraint between ranks.
//   2. Every rank posts the reduce stages in one fixed order of chunks (reduce_order, backward by default)
//      and the gather stages in another (gather_order, forward by default), both agreed by every rank (they
//      are part of the step's settings). A chunk's first reduce stage is posted when its gradients are all
//      ready here, every chunk before it in reduce_order has been posted, and fewer than reduce_window chunks
//      are in their reduce stages; its replica reduction (if any) when its group reduction has completed
//      and the chunk before it has been posted on the replica team. Gathers likewise, from the framework's
//      update on, within gather_window.
//   3. A chunk leaves its reduce stages (freeing its slot) when the last of them completes: nothing there
//      waits for the framework. The framework may hold reduced chunks for as long as it likes (global-norm
//      clipping waits for all of them) without holding up any reduction.
// Readiness may come in any order, at any granularity, differently on every rank; updates too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace psdp::engine {

// The collectives of one chunk, in the order they run: reductions, the framework's update, gathers.
enum class Stage : uint8_t {
  kReduceInGroup,         // reduce-scatter of the chunk inside the shard group
  kReduceAcrossReplicas,  // all-reduce (level group) or reduce-scatter (level world) of the group piece
  kGatherAcrossReplicas,  // all-gather of the world pieces into the group piece (level world)
  kGatherInGroup,         // all-gather of the group pieces into the chunk
};
inline constexpr int kStageKinds = 4;

const char* stageName(Stage stage);  // "reduce in group", ...

struct ScheduleParams {
  size_t chunks = 0;
  // Every chunk exactly once: the order of the reduce stages and of the gather stages.
  std::vector<uint32_t> reduce_order;
  std::vector<uint32_t> gather_order;
  // Chunks in their reduce stages, and in their gather stages, at once; at least 1.
  size_t reduce_window = 1;
  size_t gather_window = 1;
  // Which replica stages the step has: level group with replicas reduces across them (all-reduce) but does
  // not gather; level world does both; G = W neither.
  bool reduce_across_replicas = false;
  bool gather_across_replicas = false;

  // Orders by chunk index: backward (the last chunk first, as backward produces gradients) and forward.
  static std::vector<uint32_t> backward(size_t chunks);
  static std::vector<uint32_t> forward(size_t chunks);
};

// Where one chunk is in the step.
enum class ChunkState : uint8_t {
  kAwaitingGradients,  // some of its gradients are not ready here
  kGradientsReady,     // ready, not yet posted (an earlier chunk in reduce_order, or the window, holds it up)
  kReducing,           // in its reduce stages
  kReduced,            // its owned piece is reduced: the framework may update it
  kUpdated,            // updated by the framework, gather not yet posted
  kGathering,          // in its gather stages
  kGathered,           // its parameters are gathered: done
};

const char* chunkStateName(ChunkState state);

// One collective to post.
struct Post {
  uint32_t chunk;
  Stage stage;
  bool operator==(const Post&) const = default;
};

class ChunkSchedule {
 public:
  // Errors: invalid argument (an order that is not a permutation of the chunks, a window of 0).
  static Result<ChunkSchedule> create(ScheduleParams params);

  // Events. Errors: invalid usage naming the chunk and its state (an event that cannot happen in that state:
  // gradients ready twice, an update of a chunk that is not reduced, a stage that was not posted).
  Status gradientsReady(uint32_t chunk);
  Status stageDone(uint32_t chunk, Stage stage);
  Status updated(uint32_t chunk);

  // The next collective to post, if one may be posted now; it counts as posted once returned. Call it until it
  // returns nothing after every event.
  std::optional<Post> nextPost();
  // A reduced chunk not yet handed to the framework (in the order they were reduced here), handed now.
  std::optional<uint32_t> nextReduced();

  ChunkState state(uint32_t chunk) const { return chunks_[chunk].state; }
  size_t chunks() const { return chunks_.size(); }
  bool done() const { return gathered_ == chunks_.size(); }
  // The chunks in their reduce stages and in their gather stages now.
  size_t reducing() const { return reducing_; }
  size_t gathering() const { return gathering_; }
  // "chunk 3: reducing (reduce across replicas posted)", for diagnostics and timeouts.
  std::string describe(uint32_t chunk) const;

 private:
  struct Chunk {
    ChunkState state = ChunkState::kAwaitingGradients;
    // The stages posted and not yet done, one bit per Stage.
    uint8_t in_flight = 0;
    bool handed_out = false;
  };

  explicit ChunkSchedule(ScheduleParams params);
  Status expect(uint32_t chunk, ChunkState state, const char* event) const;
  Stage lastReduceStage() const;
  Stage firstGatherStage() const;
  std::optional<Post> post(uint32_t chunk, Stage stage, size_t& cursor);

  ScheduleParams params_;
  std::vector<Chunk> chunks_;
  // Next position in reduce_order / gather_order to post, per stage kind.
  size_t cursor_[kStageKinds] = {};
  size_t reducing_ = 0;
  size_t gathering_ = 0;
  size_t gathered_ = 0;
  std::deque<uint32_t> reduced_;  // reduced, not yet handed out
};

}  // namespace psdp::engine
