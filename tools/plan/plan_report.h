// What psdp-plan reports: for one model and deployment, how much state each rank holds under psdp's
// chunked sharding and under two baselines, per sharding level.
//   psdp   every chunk split into aligned pieces (psdp_plan_create through the public API)
//   zero   whole tensors assigned greedily, largest first, to the least-loaded rank (PyTorch's
//          ZeroRedundancyOptimizer)
//   fsdp2  every tensor split along dim 0 into ceil(d0 / N)-row pieces, the last ones padded (FSDP2's
//          per-parameter sharding)
// A level decides how many ranks N share the state: G (group: replicated across the R replica groups) or
// W (world).
#pragma once

#include <psdp/psdp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model_shapes.h"

namespace psdp::tools {

struct PlanOptions {
  int world_size = 1;
  int group_size = 0;  // 0: the world size
  size_t chunk_bytes = 0;
  size_t align_bytes = 0;
  size_t pad_bytes = 0;
  psdp_dtype_t param_dtype = PSDP_BFLOAT16;
  bool with_grads = true;
  psdp_dtype_t grad_dtype = PSDP_FLOAT32;
  size_t state_bytes = 12;  // optimizer-state bytes per owned element: fp32 master weight + Adam's two moments
  std::vector<psdp_shard_level_t> levels = {PSDP_SHARD_LEVEL_GROUP, PSDP_SHARD_LEVEL_WORLD};
};

struct SchemeReport {
  std::string scheme;           // "psdp", "zero", "fsdp2"
  std::string level;            // "group", "world"
  int shards = 0;               // N
  size_t chunks = 0;            // collectives per step and direction (psdp: chunks; others: tensors)
  std::vector<uint64_t> owned;  // per rank: elements it stores and updates, padding included
  uint64_t padding = 0;         // elements of padding moved by one step's reduce-scatter (or all-gather)
  uint64_t maxOwned() const;
  double meanOwned() const;
  double imbalance() const;  // max / mean; 1 is perfect
};

struct PlanReport {
  std::string model;
  size_t tensors = 0;
  uint64_t parameters = 0;
  uint64_t plan_hash = 0;  // of the psdp plan at the first level
  std::vector<SchemeReport> schemes;
};

// Builds the report; on a planner error returns false with psdp's message in *error.
bool buildPlanReport(const ModelShapes& model, const PlanOptions& options, PlanReport* report, std::string* error);

}  // namespace psdp::tools
