#include "engine/chunk_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace psdp::engine {
namespace {

constexpr uint8_t bit(Stage stage) {
  return static_cast<uint8_t>(1u << static_cast<unsigned>(stage));
}

Status checkOrder(const std::vector<uint32_t>& order, size_t chunks, const char* name) {
  if (order.size() != chunks) {
    return Status::invalidArgument("{} has {} entries for {} chunks", name, order.size(), chunks);
  }
  std::vector<bool> seen(chunks, false);
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] >= chunks) return Status::invalidArgument("{}[{}] = {} is not a chunk", name, i, order[i]);
    if (seen[order[i]]) return Status::invalidArgument("{} names chunk {} twice", name, order[i]);
    seen[order[i]] = true;
  }
  return Status::ok();
}

}  // namespace

const char* stageName(Stage stage) {
  switch (stage) {
    case Stage::kReduceInGroup: return "reduce in group";
    case Stage::kReduceAcrossReplicas: return "reduce across replicas";
    case Stage::kGatherAcrossReplicas: return "gather across replicas";
    case Stage::kGatherInGroup: return "gather in group";
  }
  return "?";
}

const char* chunkStateName(ChunkState state) {
  switch (state) {
    case ChunkState::kAwaitingGradients: return "awaiting gradients";
    case ChunkState::kGradientsReady: return "gradients ready";
    case ChunkState::kReducing: return "reducing";
    case ChunkState::kReduced: return "reduced";
    case ChunkState::kUpdated: return "updated";
    case ChunkState::kGathering: return "gathering";
    case ChunkState::kGathered: return "gathered";
  }
  return "?";
}

std::vector<uint32_t> ScheduleParams::backward(size_t chunks) {
  std::vector<uint32_t> order = forward(chunks);
  std::reverse(order.begin(), order.end());
  return order;
}

std::vector<uint32_t> ScheduleParams::forward(size_t chunks) {
  std::vector<uint32_t> order(chunks);
  std::iota(order.begin(), order.end(), 0u);
  return order;
}

Result<ChunkSchedule> ChunkSchedule::create(ScheduleParams params) {
  if (params.chunks == 0) return Status::invalidArgument("a step of no chunks");
  if (params.chunks > UINT32_MAX) return Status::invalidArgument("{} chunks: at most {}", params.chunks, UINT32_MAX);
  PSDP_RETURN_IF_ERROR(checkOrder(params.reduce_order, params.chunks, "reduce order"));
  PSDP_RETURN_IF_ERROR(checkOrder(params.gather_order, params.chunks, "gather order"));
  if (params.reduce_window == 0) return Status::invalidArgument("reduce window of 0 chunks");
  if (params.gather_window == 0) return Status::invalidArgument("gather window of 0 chunks");
  return ChunkSchedule(std::move(params));
}

ChunkSchedule::ChunkSchedule(ScheduleParams params) : params_(std::move(params)), chunks_(params_.chunks) {}

Stage ChunkSchedule::lastReduceStage() const {
  return params_.reduce_across_replicas ? Stage::kReduceAcrossReplicas : Stage::kReduceInGroup;
}

Stage ChunkSchedule::firstGatherStage() const {
  return params_.gather_across_replicas ? Stage::kGatherAcrossReplicas : Stage::kGatherInGroup;
}

Status ChunkSchedule::expect(uint32_t chunk, ChunkState state, const char* event) const {
  if (chunk >= chunks_.size()) {
    return Status::invalidArgument("{}: chunk {} is not one of the step's {}", event, chunk, chunks_.size());
  }
  if (chunks_[chunk].state != state) {
    return Status::invalidUsage("{}: chunk {} is {}, not {}", event, chunk, chunkStateName(chunks_[chunk].state),
                                chunkStateName(state));
  }
  return Status::ok();
}

Status ChunkSchedule::gradientsReady(uint32_t chunk) {
  PSDP_RETURN_IF_ERROR(expect(chunk, ChunkState::kAwaitingGradients, "gradients ready"));
  chunks_[chunk].state = ChunkState::kGradientsReady;
  return Status::ok();
}

Status ChunkSchedule::stageDone(uint32_t chunk, Stage stage) {
  if (chunk >= chunks_.size()) {
    return Status::invalidArgument("{} done: chunk {} is not one of the step's {}", stageName(stage), chunk,
                                   chunks_.size());
  }
  Chunk& c = chunks_[chunk];
  if ((c.in_flight & bit(stage)) == 0) {
    return Status::invalidUsage("{} done: chunk {} ({}) has no such stage in flight", stageName(stage), chunk,
                                chunkStateName(c.state));
  }
  c.in_flight = static_cast<uint8_t>(c.in_flight & ~bit(stage));
  if (stage == lastReduceStage()) {
    c.state = ChunkState::kReduced;
    --reducing_;
    reduced_.push_back(chunk);
  } else if (stage == Stage::kGatherInGroup) {
    c.state = ChunkState::kGathered;
    --gathering_;
    ++gathered_;
  }
  return Status::ok();
}

Status ChunkSchedule::updated(uint32_t chunk) {
  PSDP_RETURN_IF_ERROR(expect(chunk, ChunkState::kReduced, "updated"));
  if (!chunks_[chunk].handed_out) {
    return Status::invalidUsage("updated: chunk {} is reduced but was not handed out yet", chunk);
  }
  chunks_[chunk].state = ChunkState::kUpdated;
  return Status::ok();
}

std::optional<Post> ChunkSchedule::post(uint32_t chunk, Stage stage, size_t& cursor) {
  chunks_[chunk].in_flight = static_cast<uint8_t>(chunks_[chunk].in_flight | bit(stage));
  ++cursor;
  return Post{chunk, stage};
}

// Stages already under way go first (their chunks hold window slots); then new gathers, then new
// reductions. Any order of these checks gives the same posts per team: each team's order is fixed by its
// cursor alone.
std::optional<Post> ChunkSchedule::nextPost() {
  const std::vector<uint32_t>& reduce = params_.reduce_order;
  const std::vector<uint32_t>& gather = params_.gather_order;
  size_t& replica_reduce = cursor_[static_cast<int>(Stage::kReduceAcrossReplicas)];
  if (params_.reduce_across_replicas && replica_reduce < reduce.size()) {
    // Its group reduction is done once the chunk is reducing with that stage no longer in flight.
    const uint32_t c = reduce[replica_reduce];
    if (chunks_[c].state == ChunkState::kReducing && chunks_[c].in_flight == 0) {
      return post(c, Stage::kReduceAcrossReplicas, replica_reduce);
    }
  }
  size_t& group_gather = cursor_[static_cast<int>(Stage::kGatherInGroup)];
  if (params_.gather_across_replicas && group_gather < gather.size()) {
    const uint32_t c = gather[group_gather];
    if (chunks_[c].state == ChunkState::kGathering && chunks_[c].in_flight == 0) {
      return post(c, Stage::kGatherInGroup, group_gather);
    }
  }
  const Stage first_gather = firstGatherStage();
  size_t& gather_cursor = cursor_[static_cast<int>(first_gather)];
  if (gather_cursor < gather.size() && gathering_ < params_.gather_window) {
    const uint32_t c = gather[gather_cursor];
    if (chunks_[c].state == ChunkState::kUpdated) {
      chunks_[c].state = ChunkState::kGathering;
      ++gathering_;
      return post(c, first_gather, gather_cursor);
    }
  }
  size_t& reduce_cursor = cursor_[static_cast<int>(Stage::kReduceInGroup)];
  if (reduce_cursor < reduce.size() && reducing_ < params_.reduce_window) {
    const uint32_t c = reduce[reduce_cursor];
    if (chunks_[c].state == ChunkState::kGradientsReady) {
      chunks_[c].state = ChunkState::kReducing;
      ++reducing_;
      return post(c, Stage::kReduceInGroup, reduce_cursor);
    }
  }
  return std::nullopt;
}

std::optional<uint32_t> ChunkSchedule::nextReduced() {
  if (reduced_.empty()) return std::nullopt;
  const uint32_t chunk = reduced_.front();
  reduced_.pop_front();
  chunks_[chunk].handed_out = true;
  return chunk;
}

std::string ChunkSchedule::describe(uint32_t chunk) const {
  if (chunk >= chunks_.size()) return fmt::format("chunk {}: not in the step", chunk);
  const Chunk& c = chunks_[chunk];
  std::string text = fmt::format("chunk {}: {}", chunk, chunkStateName(c.state));
  for (Stage stage :
       {Stage::kReduceInGroup, Stage::kReduceAcrossReplicas, Stage::kGatherAcrossReplicas, Stage::kGatherInGroup}) {
    if ((c.in_flight & bit(stage)) != 0) text += fmt::format(" ({} posted)", stageName(stage));
  }
  if (c.state == ChunkState::kGradientsReady) text += " (waiting for its turn or a window slot)";
  return text;
}

}  // namespace psdp::engine
