// What the shard-plan and state-registration calls share at the C boundary: the psdp_plan_h handle and
// its registry of live plans (a freed or foreign plan is refused, not dereferenced), and the translation
// of psdp_buffer_desc_t and psdp_plan_config_t into the planner's types.
#pragma once

#include <psdp/psdp.h>

#include <vector>

#include "base/status.h"
#include "shard/shard_plan.h"

struct psdp_plan {
  psdp::shard::ShardPlan impl;
};

namespace psdp::api {

// Makes `plan` a live handle.
psdp_plan_h adoptPlan(shard::ShardPlan plan);
// OK for a live plan; invalid argument for NULL, invalid usage for a freed or foreign one.
Status checkPlan(psdp_plan_h plan, const char* arg_name);
// Forgets and deletes a live plan. Errors as checkPlan.
Status freePlan(psdp_plan_h plan);

// The caller's config with the fields beyond its size (an older caller) left unset, and unset fields at
// their defaults (G = world_size, level group, 64 MiB chunks, 256-byte alignment). rank_layout: NULL, or
// world_size ranks.
Result<shard::PlanConfig> translatePlanConfig(const psdp_plan_config_t* config, int world_size, const int* rank_layout);
// Enum values pass through as they are: the planner rejects unknown ones, naming the buffer.
Result<std::vector<shard::BufferDesc>> translateBuffers(const psdp_buffer_desc_t* buffers, int nbuffers);

}  // namespace psdp::api
