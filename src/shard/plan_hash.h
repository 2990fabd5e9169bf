// The plan's digest: ranks exchange it to check that they computed the same plan, and a shard file can
// record it. It covers exactly what the plan is a function of, so it never depends on addresses, device
// indices or the order of unrelated allocations.
#pragma once

#include <cstdint>
#include <span>

#include "shard/plan_input.h"
#include "shard/rank_layout.h"

namespace psdp::shard {

// FNV-1a over a fixed little-endian serialization, finished with a 64-bit mixer: a version tag, W, G,
// level, chunk_bytes, align_bytes, pad_bytes, the rank layout, then for every parameter and gradient in
// registration order its role, name, count, dtype and memory kind. Optimizer-state buffers are left out:
// they are sized by the plan, not input to it. Stable across runs, hosts and builds of this version.
uint64_t planHash(std::span<const BufferDesc> buffers, const PlanConfig& config, const RankLayout& layout);

}  // namespace psdp::shard
