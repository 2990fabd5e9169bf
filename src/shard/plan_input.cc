#include "shard/plan_input.h"

#include <bit>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace psdp::shard {

const char* roleName(Role role) {
  switch (role) {
    case Role::kParameter: return "parameter";
    case Role::kGradient: return "gradient";
    case Role::kOptimizerState: return "optimizer state";
    case Role::kGradientShard: return "gradient shard";
  }
  return "unknown";
}

namespace {

// Each buffer on its own: name, count, dtype, byte size.
Status checkBuffer(size_t i, const BufferDesc& b) {
  if (b.name.empty()) return Status::invalidArgument("buffers[{}]: name is empty", i);
  // Optimizer state is sized by the plan, and a rank may own nothing (more ranks than aligned units).
  if (b.count == 0 && !isShardSized(b.role)) {
    return Status::invalidArgument("buffers[{}] '{}': count is 0", i, b.name);
  }
  uint64_t size = dtypeSize(b.dtype);
  if (size == 0) {
    return Status::invalidArgument("buffers[{}] '{}': dtype {} is not a psdp_dtype_t", i, b.name,
                                   static_cast<int>(b.dtype));
  }
  if (b.memory != MemoryKind::kHost && b.memory != MemoryKind::kCuda) {
    return Status::invalidArgument("buffers[{}] '{}': memory kind {} is neither host nor CUDA", i, b.name,
                                   static_cast<int>(b.memory));
  }
  if (b.memory == MemoryKind::kCuda && b.device < 0) {
    return Status::invalidArgument("buffers[{}] '{}': device {} is negative", i, b.name, b.device);
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(b.count, size, &bytes)) {
    return Status::invalidArgument("buffers[{}] '{}': count {} of {} overflows a 64-bit byte size", i, b.name, b.count,
                                   dtypeName(b.dtype));
  }
  return Status::ok();
}

Status checkNames(std::span<const BufferDesc> buffers) {
  std::unordered_map<std::string_view, size_t> seen;
  for (size_t i = 0; i < buffers.size(); ++i) {
    auto [it, inserted] = seen.emplace(buffers[i].name, i);
    if (!inserted) {
      return Status::invalidArgument("buffers[{}] '{}': duplicate name (also buffers[{}])", i, buffers[i].name,
                                     it->second);
    }
  }
  return Status::ok();
}

// Gradient i belongs to parameter i (both in registration order) and has its count; a plan may also be
// made from parameters alone (e.g. by psdp-plan).
Status checkPairs(std::span<const BufferDesc> buffers) {
  std::vector<size_t> params, grads;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].role == Role::kParameter) params.push_back(i);
    if (buffers[i].role == Role::kGradient) grads.push_back(i);
  }
  if (params.empty()) return Status::invalidArgument("buffers: no parameter among {} buffers", buffers.size());
  if (!grads.empty() && grads.size() != params.size()) {
    return Status::invalidArgument("buffers: {} gradients for {} parameters (gradient i pairs with parameter i)",
                                   grads.size(), params.size());
  }
  for (size_t j = 0; j < grads.size(); ++j) {
    const BufferDesc& p = buffers[params[j]];
    const BufferDesc& g = buffers[grads[j]];
    if (g.count != p.count) {
      return Status::invalidArgument("buffers[{}] '{}': count {} differs from its parameter buffers[{}] '{}' ({})",
                                     grads[j], g.name, g.count, params[j], p.name, p.count);
    }
  }
  return Status::ok();
}

// The gradient shard receives every reduced gradient widened to float32: there is at most one, it is
// float32 host memory, and the gradients it receives are float16, bfloat16 or float32 (a wider gradient
// would lose precision in it, an integer one is no gradient to widen).
Status checkGradientShard(std::span<const BufferDesc> buffers) {
  std::optional<size_t> shard;
  bool has_gradients = false;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferDesc& b = buffers[i];
    has_gradients = has_gradients || b.role == Role::kGradient;
    if (b.role != Role::kGradientShard) continue;
    if (shard) {
      return Status::invalidArgument("buffers[{}] '{}': a second gradient shard (also buffers[{}])", i, b.name, *shard);
    }
    shard = i;
    if (b.dtype != PSDP_FLOAT32) {
      return Status::invalidArgument("buffers[{}] '{}': a gradient shard is float32, not {}", i, b.name,
                                     dtypeName(b.dtype));
    }
    if (b.memory != MemoryKind::kHost) {
      return Status::invalidArgument("buffers[{}] '{}': a gradient shard is host memory", i, b.name);
    }
  }
  if (!shard) return Status::ok();
  if (!has_gradients) {
    return Status::invalidArgument("buffers[{}] '{}': a gradient shard without gradients to reduce into it", *shard,
                                   buffers[*shard].name);
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferDesc& b = buffers[i];
    if (b.role == Role::kGradient && b.dtype != PSDP_FLOAT32 && b.dtype != PSDP_BFLOAT16 && b.dtype != PSDP_FLOAT16) {
      return Status::invalidArgument(
          "buffers[{}] '{}': gradients of {} cannot be delivered into the float32 gradient shard buffers[{}] '{}' "
          "(float16, bfloat16 or float32 only)",
          i, b.name, dtypeName(b.dtype), *shard, buffers[*shard].name);
    }
  }
  return Status::ok();
}

Status checkAlignment(std::span<const BufferDesc> buffers, const PlanConfig& config) {
  const uint64_t align = config.align_bytes;
  if (align == 0 || !std::has_single_bit(align)) {
    return Status::invalidArgument("align_bytes {} is not a power of two", align);
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferDesc& b = buffers[i];
    if (isShardSized(b.role)) continue;  // not part of the flat spaces
    if (dtypeSize(b.dtype) > align) {
      return Status::invalidArgument("align_bytes {} is smaller than the {}-byte dtype {} of buffers[{}] '{}'", align,
                                     dtypeSize(b.dtype), dtypeName(b.dtype), i, b.name);
    }
  }
  if (config.pad_bytes % align != 0) {
    return Status::invalidArgument("pad_bytes {} is not a multiple of align_bytes {}", config.pad_bytes, align);
  }
  return Status::ok();
}

Status checkRankLayout(const PlanConfig& config) {
  const std::vector<int>& layout = config.rank_layout;
  if (layout.empty()) return Status::ok();
  if (layout.size() != static_cast<size_t>(config.world_size)) {
    return Status::invalidArgument("rank_layout has {} entries, not world_size {}", layout.size(), config.world_size);
  }
  std::vector<int> position(layout.size(), -1);
  for (size_t i = 0; i < layout.size(); ++i) {
    int r = layout[i];
    if (r < 0 || r >= config.world_size) {
      return Status::invalidArgument("rank_layout[{}] = {} is outside [0, {})", i, r, config.world_size);
    }
    if (position[r] >= 0) {
      return Status::invalidArgument("rank_layout[{}] = {} repeats rank_layout[{}]: not a permutation", i, r,
                                     position[r]);
    }
    position[r] = static_cast<int>(i);
  }
  return Status::ok();
}

Status checkConfig(const PlanConfig& config) {
  if (config.world_size < 1) return Status::invalidArgument("world_size {} is less than 1", config.world_size);
  if (config.group_size < 1 || config.world_size % config.group_size != 0) {
    return Status::invalidArgument("group_size {} does not divide world_size {}", config.group_size, config.world_size);
  }
  if (config.level != ShardLevel::kGroup && config.level != ShardLevel::kWorld) {
    return Status::invalidArgument("level {} is neither group nor world", static_cast<int>(config.level));
  }
  if (config.chunk_bytes == 0) return Status::invalidArgument("chunk_bytes is 0");
  return checkRankLayout(config);
}

// The flat spaces add counts up; a sum that wraps would silently corrupt every offset.
Status checkTotal(std::span<const BufferDesc> buffers) {
  uint64_t total = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].role != Role::kParameter) continue;
    uint64_t bytes = buffers[i].count * dtypeSize(buffers[i].dtype);
    if (__builtin_add_overflow(total, bytes, &total)) {
      return Status::invalidArgument("buffers[{}] '{}': the parameters' byte sizes add up beyond 64 bits", i,
                                     buffers[i].name);
    }
  }
  return Status::ok();
}

}  // namespace

Status checkPlanInput(std::span<const BufferDesc> buffers, const PlanConfig& config) {
  if (buffers.empty()) return Status::invalidArgument("buffers: the list is empty");
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Role role = buffers[i].role;
    if (role != Role::kParameter && role != Role::kGradient && role != Role::kOptimizerState &&
        role != Role::kGradientShard) {
      return Status::invalidArgument("buffers[{}] '{}': role {} is not a buffer role", i, buffers[i].name,
                                     static_cast<int>(role));
    }
    PSDP_RETURN_IF_ERROR(checkBuffer(i, buffers[i]));
  }
  PSDP_RETURN_IF_ERROR(checkNames(buffers));
  PSDP_RETURN_IF_ERROR(checkPairs(buffers));
  PSDP_RETURN_IF_ERROR(checkGradientShard(buffers));
  PSDP_RETURN_IF_ERROR(checkTotal(buffers));
  PSDP_RETURN_IF_ERROR(checkConfig(config));
  return checkAlignment(buffers, config);
}

}  // namespace psdp::shard
