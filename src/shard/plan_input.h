// What the shard planner is a function of: the registered buffers (shapes, not addresses) and the plan
// configuration. Everything here is plain data; checkPlanInput() decides whether it makes a plan.
#pragma once

#include <psdp/psdp.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"

namespace psdp::shard {

// kGradientShard: the rank's owned elements of the reduced gradient, in shard-file order (like optimizer
// state), where a step delivers them in float32 (mixed precision; engine/chunk_packing.h).
enum class Role : int { kParameter, kGradient, kOptimizerState, kGradientShard };

// Buffers the plan sizes (each rank's owned element count) and leaves out of its spaces.
inline bool isShardSized(Role role) {
  return role == Role::kOptimizerState || role == Role::kGradientShard;
}
enum class MemoryKind : int { kHost, kCuda };

// Where the optimizer state (and so the reduced gradient) of a chunk lives: in each rank's piece of its
// shard group (replicated across the R replica groups), or in its 1/W piece of the world, nested inside
// that group piece.
enum class ShardLevel : int { kGroup, kWorld };

// One registered buffer as the planner sees it. It has no pointer and the plan ignores the device index,
// so that every rank computes the same plan (and hash) from its own buffers.
struct BufferDesc {
  std::string name;
  uint64_t count = 0;  // elements
  psdp_dtype_t dtype = PSDP_FLOAT32;
  Role role = Role::kParameter;
  MemoryKind memory = MemoryKind::kHost;
  int device = 0;  // CUDA device of this rank; not part of the plan
};

inline constexpr uint64_t kDefaultChunkBytes = uint64_t{64} << 20;
inline constexpr uint64_t kDefaultAlignBytes = 256;

struct PlanConfig {
  int world_size = 1;  // W
  int group_size = 1;  // G; must divide W. G == W: ZeRO-1/2; G < W: R = W / G replica groups
  ShardLevel level = ShardLevel::kGroup;
  // Target bytes of one chunk's collective (see ShardPlan for how it becomes an element count).
  uint64_t chunk_bytes = kDefaultChunkBytes;
  // Every piece boundary is this many bytes into its flat space, for every dtype of the space.
  uint64_t align_bytes = kDefaultAlignBytes;
  // 0, or a multiple of align_bytes: the equal per-rank count of a chunk's collectives is rounded up to it.
  uint64_t pad_bytes = 0;
  // A permutation of [0, W): shard group k is rank_layout[k*G .. k*G+G-1], member g of every group is
  // rank_layout[k*G+g]. Empty: contiguous blocks of G ranks.
  std::vector<int> rank_layout;
};

// Element sizes and dtype names are base/dtype.h's.
using psdp::dtypeName;
using psdp::dtypeSize;
const char* roleName(Role role);

// Rejects what cannot make a plan, with invalid-argument naming the field and the buffer (index and
// name): no buffers or no parameter, a zero count (of a parameter or gradient: optimizer state is sized by
// the plan and may be empty), an empty or duplicate name, an unknown dtype, a
// gradient list that does not pair with the parameters (gradient i has parameter i's count), a byte size
// that overflows 64 bits, W < 1, a G that does not divide W, an alignment that is not a power of two or is
// smaller than a dtype of a parameter or gradient, pad_bytes not a multiple of the alignment, chunk_bytes
// 0, a rank layout that is not a permutation of [0, W), a gradient shard that is not one float32 host
// buffer receiving float16, bfloat16 or float32 gradients.
Status checkPlanInput(std::span<const BufferDesc> buffers, const PlanConfig& config);

}  // namespace psdp::shard
