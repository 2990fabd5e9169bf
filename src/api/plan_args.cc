#include "api/plan_args.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "api/live_handles.h"

namespace psdp::api {
namespace {

using LivePlans = LiveHandles<psdp_plan_h>;

}  // namespace

psdp_plan_h adoptPlan(shard::ShardPlan plan) {
  auto handle = std::make_unique<psdp_plan>(psdp_plan{std::move(plan)});
  LivePlans::instance().add(handle.get());
  return handle.release();
}

Status checkPlan(psdp_plan_h plan, const char* arg_name) {
  if (plan == nullptr) return Status::invalidArgument("{} is NULL", arg_name);
  if (!LivePlans::instance().contains(plan)) {
    return Status::invalidUsage("{} is not a live plan (freed, or not made by psdp_plan_create)", arg_name);
  }
  return Status::ok();
}

Status freePlan(psdp_plan_h plan) {
  if (plan == nullptr) return Status::invalidArgument("plan is NULL");
  if (!LivePlans::instance().remove(plan)) {
    return Status::invalidUsage("plan is not a live plan (freed already, or not made by psdp_plan_create)");
  }
  delete plan;
  return Status::ok();
}

Result<shard::PlanConfig> translatePlanConfig(const psdp_plan_config_t* user, int world_size, const int* rank_layout) {
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

}  // namespace psdp::api
