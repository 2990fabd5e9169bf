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
// registration order its role, name, count, dtype and memory kind. Optimizer-state and gradient-shard
// buffers are left out: they are sized by the plan, not input to it. Stable across runs, hosts and builds of this
// version.
uint64_t planHash(std::span<const BufferDesc> buffers, const PlanConfig& config, const RankLayout& layout);

// What collective registration compares (core/state_registration.h), with the same hash. One buffer as
// every rank must register it: role, name, dtype, memory kind, and the count except for optimizer state and
// the gradient shard (sized per rank by the plan). Never the pointer or the device index.
uint64_t registrationDigest(const BufferDesc& buffer);
// The configuration fields a rank chooses (G, level, chunk, alignment, padding), not W or the layout.
uint64_t configDigest(const PlanConfig& config);
// A digest of a sequence of digests, order included.
uint64_t digestOf(std::span<const uint64_t> digests);

}  // namespace psdp::shard
