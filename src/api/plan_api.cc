// The C boundary for standalone shard plans: argument checks and translation to shard::ShardPlan only.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "api/guard.h"
#include "api/plan_args.h"
#include "api/validate.h"
#include "shard/reshard.h"
#include "shard/shard_plan.h"

using psdp::Result;
using psdp::Status;
using psdp::api::adoptPlan;
using psdp::api::checkOut;
using psdp::api::checkPlan;
using psdp::api::freePlan;
using psdp::api::guarded;
using psdp::api::translateBuffers;
using psdp::api::translatePlanConfig;
namespace shard = psdp::shard;

namespace {

Status checkRank(const shard::ShardPlan& plan, int rank) {
  if (rank < 0 || rank >= plan.config().world_size) {
    return Status::invalidArgument("rank {} is outside [0, {})", rank, plan.config().world_size);
  }
  return Status::ok();
}

Status checkChunk(const shard::ShardPlan& plan, size_t chunk, bool all_allowed) {
  if ((all_allowed && chunk == PSDP_PLAN_ALL_CHUNKS) || chunk < plan.chunks().size()) return Status::ok();
  return Status::invalidArgument("chunk {} is outside [0, {})", chunk, plan.chunks().size());
}

psdp_memory_kind_t memoryKind(shard::MemoryKind kind) {
  return static_cast<psdp_memory_kind_t>(static_cast<int>(kind));
}

// The size of psdp_plan_space_t in the first version that had it: every caller knows at least these fields.
// Later versions append fields; a caller compiled against this one still passes this size.
constexpr size_t kPlanSpaceFirstSize = offsetof(psdp_plan_space_t, chunk_count) + sizeof(size_t);
static_assert(kPlanSpaceFirstSize == 64, "psdp_plan_space_t's first fields are part of the ABI");

// A growable output: the caller's size says how much of psdp_plan_space_t it knows (PSDP_PLAN_SPACE_INITIALIZER).
Status checkSpaceOut(const psdp_plan_space_t* space_p) {
  PSDP_RETURN_IF_ERROR(checkOut(space_p, "space_p"));
  if (space_p->magic != PSDP_PLAN_SPACE_MAGIC) {
    return Status::invalidArgument(
        "space_p: magic is {:#x}, not PSDP_PLAN_SPACE_MAGIC: initialise it with PSDP_PLAN_SPACE_INITIALIZER",
        space_p->magic);
  }
  if (space_p->size < kPlanSpaceFirstSize) {
    return Status::invalidArgument("space_p: size {} is too small for a psdp_plan_space_t", space_p->size);
  }
  return Status::ok();
}

// A query that answers one value of the plan into *out (named out_name in errors).
template <typename T, typename Get>
psdp_status_t queryPlan(psdp_plan_h plan, T* out, const char* out_name, Get get) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkPlan(plan, "plan"));
    PSDP_RETURN_IF_ERROR(checkOut(out, out_name));
    *out = get(plan->impl);
    return Status::ok();
  });
}

// Writes min(capacity, all.size()) converted entries and the total.
template <typename Out, typename In, typename Convert>
Status copyOut(const std::vector<In>& all, Out* out, size_t capacity, size_t* count_p, Convert convert) {
  PSDP_RETURN_IF_ERROR(checkOut(count_p, "count_p"));
  if (capacity > 0 && out == nullptr) return Status::invalidArgument("capacity is {} but the array is NULL", capacity);
  const size_t n = std::min(capacity, all.size());
  for (size_t i = 0; i < n; ++i) out[i] = convert(all[i]);
  *count_p = all.size();
  return Status::ok();
}

psdp_owned_range_t toC(const shard::OwnedRange& r) {
  return psdp_owned_range_t{r.buffer, r.offset, r.count};
}

psdp_reshard_move_t toC(const shard::ReshardMove& m) {
  return psdp_reshard_move_t{m.from_rank, m.to_rank, m.from_offset, m.to_offset, m.count};
}

}  // namespace

extern "C" {

PSDP_API psdp_status_t psdp_plan_create(const psdp_buffer_desc_t* buffers, int nbuffers, int world_size,
                                        const int* rank_layout, const psdp_plan_config_t* config, psdp_plan_h* plan_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkOut(plan_p, "plan_p"));
    PSDP_ASSIGN_OR_RETURN(std::vector<shard::BufferDesc> descs, translateBuffers(buffers, nbuffers));
    PSDP_ASSIGN_OR_RETURN(shard::PlanConfig plan_config, translatePlanConfig(config, world_size, rank_layout));
    PSDP_ASSIGN_OR_RETURN(shard::ShardPlan plan, shard::ShardPlan::build(descs, plan_config));
    *plan_p = adoptPlan(std::move(plan));
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_plan_free(psdp_plan_h plan) {
  return guarded(nullptr, [&] { return freePlan(plan); });
}

PSDP_API psdp_status_t psdp_plan_hash(psdp_plan_h plan, uint64_t* hash_p) {
  return queryPlan(plan, hash_p, "hash_p", [](const shard::ShardPlan& p) { return p.hash(); });
}

PSDP_API psdp_status_t psdp_plan_chunk_count(psdp_plan_h plan, size_t* count_p) {
  return queryPlan(plan, count_p, "count_p", [](const shard::ShardPlan& p) { return p.chunks().size(); });
}

PSDP_API psdp_status_t psdp_plan_get_chunk(psdp_plan_h plan, size_t chunk, psdp_plan_chunk_t* chunk_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkPlan(plan, "plan"));
    PSDP_RETURN_IF_ERROR(checkChunk(plan->impl, chunk, false));
    PSDP_RETURN_IF_ERROR(checkOut(chunk_p, "chunk_p"));
    const shard::Chunk& c = plan->impl.chunks()[chunk];
    const shard::Space& space = plan->impl.spaces()[c.space];
    psdp_plan_chunk_t out{};
    out.space = static_cast<size_t>(c.space);
    out.dtype = space.dtype;
    out.memory_kind = memoryKind(space.memory);
    out.offset = c.begin;
    out.count = c.count;
    out.padded_group_piece = c.padded_group_piece;
    out.padded_world_piece = c.padded_world_piece;
    *chunk_p = out;
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_plan_space_count(psdp_plan_h plan, size_t* count_p) {
  return queryPlan(plan, count_p, "count_p", [](const shard::ShardPlan& p) { return p.spaces().size(); });
}

PSDP_API psdp_status_t psdp_plan_get_space(psdp_plan_h plan, size_t space, psdp_plan_space_t* space_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkPlan(plan, "plan"));
    const std::vector<shard::Space>& spaces = plan->impl.spaces();
    if (space >= spaces.size()) return Status::invalidArgument("space {} is outside [0, {})", space, spaces.size());
    PSDP_RETURN_IF_ERROR(checkSpaceOut(space_p));
    const shard::Space& s = spaces[space];
    psdp_plan_space_t out{};
    out.size = space_p->size;
    out.magic = space_p->magic;
    out.version = space_p->version;
    out.dtype = s.dtype;
    out.memory_kind = memoryKind(s.memory);
    out.has_gradients = s.grad_dtype.has_value() ? 1 : 0;
    out.grad_dtype = s.grad_dtype.value_or(s.dtype);
    out.grad_memory_kind = memoryKind(s.grad_memory.value_or(s.memory));
    out.count = s.size();
    out.align_unit = s.unit;
    out.chunk_count = s.chunks.size();
    // Only the fields the caller knows: an older caller's struct may be shorter than this version's, and a
    // newer caller's longer one keeps the fields this version lacks.
    std::memcpy(space_p, &out, std::min(space_p->size, sizeof(out)));
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_plan_owned_ranges(psdp_plan_h plan, int rank, size_t chunk, psdp_owned_range_t* ranges,
                                              size_t capacity, size_t* count_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkPlan(plan, "plan"));
    PSDP_RETURN_IF_ERROR(checkRank(plan->impl, rank));
    PSDP_RETURN_IF_ERROR(checkChunk(plan->impl, chunk, true));
    const std::vector<shard::OwnedRange> all =
        chunk == PSDP_PLAN_ALL_CHUNKS ? plan->impl.ownedRanges(rank) : plan->impl.ownedRanges(rank, chunk);
    return copyOut(all, ranges, capacity, count_p, [](const shard::OwnedRange& r) { return toC(r); });
  });
}

PSDP_API psdp_status_t psdp_plan_owned_count(psdp_plan_h plan, int rank, size_t chunk, size_t* count_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkPlan(plan, "plan"));
    PSDP_RETURN_IF_ERROR(checkRank(plan->impl, rank));
    PSDP_RETURN_IF_ERROR(checkChunk(plan->impl, chunk, true));
    PSDP_RETURN_IF_ERROR(checkOut(count_p, "count_p"));
    *count_p = chunk == PSDP_PLAN_ALL_CHUNKS ? plan->impl.ownedCount(rank) : plan->impl.ownedCount(rank, chunk);
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_plan_optimizer_state_count(psdp_plan_h plan, int rank, size_t* count_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkPlan(plan, "plan"));
    PSDP_RETURN_IF_ERROR(checkRank(plan->impl, rank));
    PSDP_RETURN_IF_ERROR(checkOut(count_p, "count_p"));
    *count_p = plan->impl.ownedCount(rank);
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_plan_shard_offset(psdp_plan_h plan, int rank, size_t chunk, size_t* offset_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkPlan(plan, "plan"));
    PSDP_RETURN_IF_ERROR(checkRank(plan->impl, rank));
    PSDP_RETURN_IF_ERROR(checkChunk(plan->impl, chunk, false));
    PSDP_RETURN_IF_ERROR(checkOut(offset_p, "offset_p"));
    *offset_p = plan->impl.shardOffset(rank, chunk);
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_plan_find_chunk(psdp_plan_h plan, int buffer, size_t offset, size_t* chunk_p,
                                            size_t* chunk_offset_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkPlan(plan, "plan"));
    PSDP_RETURN_IF_ERROR(checkOut(chunk_p, "chunk_p"));
    PSDP_ASSIGN_OR_RETURN(shard::ChunkPosition pos, plan->impl.findChunk(buffer, offset));
    *chunk_p = pos.chunk;
    if (chunk_offset_p != nullptr) *chunk_offset_p = pos.offset;
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_plan_reshard_moves(psdp_plan_h old_plan, psdp_plan_h new_plan, psdp_reshard_move_t* moves,
                                               size_t capacity, size_t* count_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkPlan(old_plan, "old_plan"));
    PSDP_RETURN_IF_ERROR(checkPlan(new_plan, "new_plan"));
    PSDP_ASSIGN_OR_RETURN(std::vector<shard::ReshardMove> all, shard::reshardMoves(old_plan->impl, new_plan->impl));
    return copyOut(all, moves, capacity, count_p, [](const shard::ReshardMove& m) { return toC(m); });
  });
}

}  // extern "C"
