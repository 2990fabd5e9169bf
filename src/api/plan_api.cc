// The C boundary for standalone shard plans: argument checks and translation to shard::ShardPlan only.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "api/guard.h"
#include "shard/reshard.h"
#include "shard/shard_plan.h"

using psdp::Result;
using psdp::Status;
using psdp::api::guarded;
namespace shard = psdp::shard;

struct psdp_plan {
  shard::ShardPlan impl;
};

namespace {

// Live plans, so that a freed or foreign pointer is refused instead of dereferenced.
struct PlanRegistry {
  std::mutex mutex;
  std::unordered_set<psdp_plan_h> live;
};

PlanRegistry& registry() {
  static PlanRegistry* instance = new PlanRegistry();  // leaked: plans may be freed from static destructors
  return *instance;
}

Status checkPlan(psdp_plan_h plan, const char* arg_name) {
  if (plan == nullptr) return Status::invalidArgument("{} is NULL", arg_name);
  std::lock_guard<std::mutex> lock(registry().mutex);
  if (registry().live.count(plan) == 0) {
    return Status::invalidUsage("{} is not a live plan (freed, or not made by psdp_plan_create)", arg_name);
  }
  return Status::ok();
}

Status checkOut(const void* out, const char* name) {
  if (out == nullptr) return Status::invalidArgument("{} is NULL", name);
  return Status::ok();
}

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

// The caller's struct, with the fields beyond its size (an older caller) left unset.
Result<shard::PlanConfig> translateConfig(const psdp_plan_config_t* user, int world_size, const int* rank_layout) {
  psdp_plan_config_t c = PSDP_PLAN_CONFIG_INITIALIZER;
  if (user != nullptr) {
    if (user->magic != PSDP_PLAN_CONFIG_MAGIC) {
      return Status::invalidArgument(
          "config: magic is {:#x}, not PSDP_PLAN_CONFIG_MAGIC: initialise it with "
          "PSDP_PLAN_CONFIG_INITIALIZER",
          user->magic);
    }
    if (user->size < offsetof(psdp_plan_config_t, group_size)) {
      return Status::invalidArgument("config: size {} is too small for a psdp_plan_config_t", user->size);
    }
    std::memcpy(&c, user, std::min(user->size, sizeof(c)));
  }
  shard::PlanConfig out;
  out.world_size = world_size;
  out.group_size = c.group_size == 0 ? world_size : c.group_size;
  if (c.level != PSDP_SHARD_LEVEL_UNSET && c.level != PSDP_SHARD_LEVEL_GROUP && c.level != PSDP_SHARD_LEVEL_WORLD) {
    return Status::invalidArgument("config: level {} is not a psdp_shard_level_t", c.level);
  }
  out.level = c.level == PSDP_SHARD_LEVEL_WORLD ? shard::ShardLevel::kWorld : shard::ShardLevel::kGroup;
  out.chunk_bytes = c.chunk_bytes == 0 ? shard::kDefaultChunkBytes : c.chunk_bytes;
  out.align_bytes = c.align_bytes == 0 ? shard::kDefaultAlignBytes : c.align_bytes;
  out.pad_bytes = c.pad_bytes;
  if (rank_layout != nullptr && world_size > 0) out.rank_layout.assign(rank_layout, rank_layout + world_size);
  return out;
}

// Enum values are passed through as they are: the planner rejects unknown ones, naming the buffer.
Result<std::vector<shard::BufferDesc>> translateBuffers(const psdp_buffer_desc_t* buffers, int nbuffers) {
  if (nbuffers < 0) return Status::invalidArgument("nbuffers {} is negative", nbuffers);
  if (nbuffers > 0 && buffers == nullptr) return Status::invalidArgument("buffers is NULL");
  std::vector<shard::BufferDesc> out(nbuffers);
  for (int i = 0; i < nbuffers; ++i) {
    const psdp_buffer_desc_t& b = buffers[i];
    if (b.name == nullptr) return Status::invalidArgument("buffers[{}]: name is NULL", i);
    out[i] = shard::BufferDesc{b.name,
                               b.count,
                               b.dtype,
                               static_cast<shard::Role>(static_cast<int>(b.role)),
                               static_cast<shard::MemoryKind>(static_cast<int>(b.memory_kind)),
                               b.device};
  }
  return out;
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
    PSDP_ASSIGN_OR_RETURN(shard::PlanConfig plan_config, translateConfig(config, world_size, rank_layout));
    PSDP_ASSIGN_OR_RETURN(shard::ShardPlan plan, shard::ShardPlan::build(descs, plan_config));
    auto handle = std::make_unique<psdp_plan>(psdp_plan{std::move(plan)});
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().live.insert(handle.get());
    *plan_p = handle.release();
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_plan_free(psdp_plan_h plan) {
  return guarded(nullptr, [&] {
    if (plan == nullptr) return Status::invalidArgument("plan is NULL");
    {
      std::lock_guard<std::mutex> lock(registry().mutex);
      if (registry().live.erase(plan) == 0) {
        return Status::invalidUsage("plan is not a live plan (freed already, or not made by psdp_plan_create)");
      }
    }
    delete plan;
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_plan_hash(psdp_plan_h plan, uint64_t* hash_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkPlan(plan, "plan"));
    PSDP_RETURN_IF_ERROR(checkOut(hash_p, "hash_p"));
    *hash_p = plan->impl.hash();
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_plan_chunk_count(psdp_plan_h plan, size_t* count_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkPlan(plan, "plan"));
    PSDP_RETURN_IF_ERROR(checkOut(count_p, "count_p"));
    *count_p = plan->impl.chunks().size();
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_plan_get_chunk(psdp_plan_h plan, size_t chunk, psdp_plan_chunk_t* chunk_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkPlan(plan, "plan"));
    PSDP_RETURN_IF_ERROR(checkChunk(plan->impl, chunk, false));
    PSDP_RETURN_IF_ERROR(checkOut(chunk_p, "chunk_p"));
    const shard::Chunk& c = plan->impl.chunks()[chunk];
    const shard::Space& space = plan->impl.spaces()[c.space];
    *chunk_p = psdp_plan_chunk_t{static_cast<size_t>(c.space),
                                 space.dtype,
                                 static_cast<psdp_memory_kind_t>(static_cast<int>(space.memory)),
                                 c.begin,
                                 c.count,
                                 c.padded_group_piece,
                                 c.padded_world_piece};
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
