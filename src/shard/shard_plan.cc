#include "shard/shard_plan.h"

#include <algorithm>
#include <tuple>

#include "shard/plan_hash.h"

namespace psdp::shard {
namespace {

// What makes two parameters share a flat space (see shard_plan.h).
struct SpaceKey {
  MemoryKind memory;
  psdp_dtype_t dtype;
  std::optional<psdp_dtype_t> grad_dtype;
  std::optional<MemoryKind> grad_memory;
  bool operator==(const SpaceKey&) const = default;
};

uint64_t roundUp(uint64_t v, uint64_t m) {
  return (v + m - 1) / m * m;
}

}  // namespace

ShardPlan::ShardPlan(std::vector<BufferDesc> buffers, PlanConfig config)
    : buffers_(std::move(buffers)),
      config_(std::move(config)),
      layout_(config_.world_size, config_.group_size, config_.rank_layout) {}

Result<ShardPlan> ShardPlan::build(std::span<const BufferDesc> buffers, const PlanConfig& config) {
  PSDP_RETURN_IF_ERROR(checkPlanInput(buffers, config));
  ShardPlan plan(std::vector<BufferDesc>(buffers.begin(), buffers.end()), config);
  plan.buildSpaces();
  PSDP_RETURN_IF_ERROR(plan.buildChunks());
  plan.hash_ = planHash(plan.buffers_, plan.config_, plan.layout_);
  return plan;
}

// Pairs gradients with parameters and gathers the parameters into spaces, in registration order.
void ShardPlan::buildSpaces() {
  const size_t n = buffers_.size();
  pair_.assign(n, -1);
  space_of_.assign(n, -1);
  slot_.assign(n, 0);
  std::vector<int> params, grads;
  for (size_t i = 0; i < n; ++i) {
    if (buffers_[i].role == Role::kParameter) params.push_back(static_cast<int>(i));
    if (buffers_[i].role == Role::kGradient) grads.push_back(static_cast<int>(i));
  }
  std::vector<SpaceKey> keys;
  for (size_t j = 0; j < params.size(); ++j) {
    const BufferDesc& p = buffers_[params[j]];
    SpaceKey key{p.memory, p.dtype, std::nullopt, std::nullopt};
    if (!grads.empty()) {
      key.grad_dtype = buffers_[grads[j]].dtype;
      key.grad_memory = buffers_[grads[j]].memory;
    }
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      spaces_.push_back(Space{key.memory, key.dtype, key.grad_dtype, key.grad_memory, 1, 1, {}, {0}, {}});
      it = keys.end() - 1;
    }
    const int s = static_cast<int>(it - keys.begin());
    Space& space = spaces_[s];
    for (int b : {params[j], grads.empty() ? -1 : grads[j]}) {
      if (b < 0) continue;
      pair_[b] = params[j];
      space_of_[b] = s;
    }
    slot_[params[j]] = space.buffers.size();
    space.buffers.push_back(params[j]);
    space.starts.push_back(space.starts.back() + p.count);  // checkPlanInput bounds the byte total
  }
}

Status ShardPlan::buildChunks() {
  const uint64_t level_parts = config_.level == ShardLevel::kWorld ? config_.world_size : config_.group_size;
  for (size_t s = 0; s < spaces_.size(); ++s) {
    Space& space = spaces_[s];
    const uint64_t a = dtypeSize(space.dtype);
    const uint64_t b = space.grad_dtype ? dtypeSize(*space.grad_dtype) : a;
    const uint64_t s_min = std::min(a, b), s_max = std::max(a, b);
    space.unit = config_.align_bytes / s_min;
    const uint64_t pad_unit = std::max(space.unit, config_.pad_bytes / s_min);
    // Piece arithmetic goes up to a space's size plus one chunk step and one padding unit.
    uint64_t step = 0, limit = 0;
    if (__builtin_mul_overflow(level_parts, space.unit, &step) || __builtin_add_overflow(space.size(), step, &limit) ||
        __builtin_add_overflow(limit, pad_unit, &limit)) {
      return Status::invalidArgument("align_bytes {} (pad_bytes {}) over {} ranks overflows a space of {} elements",
                                     config_.align_bytes, config_.pad_bytes, level_parts, space.size());
    }
    space.chunk_count = std::max(step, config_.chunk_bytes / s_max / step * step);
    for (uint64_t begin = 0; begin < space.size(); begin += space.chunk_count) {
      Chunk chunk{static_cast<int>(s), begin, std::min(space.chunk_count, space.size() - begin), 0, 0};
      PieceSplit split(chunk.count, space.unit, config_.group_size, layout_.replicas());
      chunk.padded_group_piece = roundUp(split.maxGroupUnits() * space.unit, pad_unit);
      chunk.padded_world_piece = config_.level == ShardLevel::kWorld
                                     ? roundUp(split.maxWorldUnits() * space.unit, pad_unit)
                                     : chunk.padded_group_piece;
      chunks_.push_back(chunk);
    }
  }
  // Registration order: by the first element's buffer, then its offset there. Chunks never overlap, so the
  // order is total.
  auto first = [&](const Chunk& c) {
    const Space& space = spaces_[c.space];
    size_t i = std::upper_bound(space.starts.begin(), space.starts.end(), c.begin) - space.starts.begin() - 1;
    return std::make_tuple(space.buffers[i], c.begin - space.starts[i]);
  };
  std::stable_sort(chunks_.begin(), chunks_.end(), [&](const Chunk& x, const Chunk& y) { return first(x) < first(y); });
  for (size_t c = 0; c < chunks_.size(); ++c) spaces_[chunks_[c].space].chunks.push_back(c);
  return Status::ok();
}

PieceSplit ShardPlan::pieceSplit(size_t chunk) const {
  const Chunk& c = chunks_[chunk];
  return PieceSplit(c.count, spaces_[c.space].unit, config_.group_size, layout_.replicas());
}

Extent ShardPlan::ownedPiece(int rank, size_t chunk) const {
  const RankPosition pos = layout_.position(rank);
  const PieceSplit split = pieceSplit(chunk);
  return config_.level == ShardLevel::kWorld ? split.worldPiece(pos.member, pos.replica) : split.groupPiece(pos.member);
}

uint64_t ShardPlan::shardOffset(int rank, size_t chunk) const {
  uint64_t offset = 0;
  for (size_t c = 0; c < chunk; ++c) offset += ownedCount(rank, c);
  return offset;
}

uint64_t ShardPlan::ownedCount(int rank) const {
  uint64_t total = 0;
  for (size_t c = 0; c < chunks_.size(); ++c) total += ownedCount(rank, c);
  return total;
}

std::vector<OwnedRange> ShardPlan::ownedRanges(int rank, size_t chunk) const {
  std::vector<OwnedRange> ranges;
  const Chunk& c = chunks_[chunk];
  const Space& space = spaces_[c.space];
  const Extent piece = ownedPiece(rank, chunk);
  uint64_t at = c.begin + piece.begin;
  const uint64_t end = at + piece.count;
  size_t i = std::upper_bound(space.starts.begin(), space.starts.end(), at) - space.starts.begin() - 1;
  for (; at < end; ++i) {
    const uint64_t take = std::min(end, space.starts[i + 1]) - at;
    ranges.push_back(OwnedRange{space.buffers[i], at - space.starts[i], take});
    at += take;
  }
  return ranges;
}

std::vector<OwnedRange> ShardPlan::ownedRanges(int rank) const {
  std::vector<OwnedRange> all;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    std::vector<OwnedRange> ranges = ownedRanges(rank, c);
    all.insert(all.end(), ranges.begin(), ranges.end());
  }
  return all;
}

uint64_t ShardPlan::spaceOffset(int param) const {
  return spaces_[space_of_[param]].starts[slot_[param]];
}

Status ShardPlan::checkShardSizedBuffers(int rank) const {
  const uint64_t owned = ownedCount(rank);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (isShardSized(buffers_[i].role) && buffers_[i].count != owned) {
      return Status::invalidArgument("buffers[{}] '{}': {} of {} elements, but rank {} owns {}", i, buffers_[i].name,
                                     roleName(buffers_[i].role), buffers_[i].count, rank, owned);
    }
  }
  return Status::ok();
}

Result<ChunkPosition> ShardPlan::findChunk(int buffer, uint64_t offset) const {
  if (buffer < 0 || static_cast<size_t>(buffer) >= buffers_.size()) {
    return Status::invalidArgument("buffer {} is outside [0, {})", buffer, buffers_.size());
  }
  const int param = pair_[buffer];
  if (param < 0) {
    return Status::invalidArgument("buffers[{}] '{}' is {}, which is in no chunk", buffer, buffers_[buffer].name,
                                   roleName(buffers_[buffer].role));
  }
  if (offset >= buffers_[buffer].count) {
    return Status::invalidArgument("offset {} is past the end of buffers[{}] '{}' ({} elements)", offset, buffer,
                                   buffers_[buffer].name, buffers_[buffer].count);
  }
  const Space& space = spaces_[space_of_[param]];
  const uint64_t x = spaceOffset(param) + offset;
  const size_t chunk = space.chunks[x / space.chunk_count];
  return ChunkPosition{chunk, x - chunks_[chunk].begin};
}

}  // namespace psdp::shard
