#include "coll/custom_ops.h"

#include <atomic>
#include <limits>

#include "coll/collectives.h"

namespace psdp::coll {
namespace {

// Next op value to hand out, shared by every communicator of the process so that values are unique.
std::atomic<int> next_op{PSDP_NUM_OPS};

// Why `value` is no live premul-sum op of this communicator: unknown unless it is a built-in op or a value
// this process has handed out (the premul-sum range, [PSDP_NUM_OPS, next_op)).
Status notLivePremulSum(const char* what, int value) {
  if (value < 0 || value >= next_op.load(std::memory_order_relaxed)) {
    return Status::invalidArgument("{}: unknown op {}", what, value);
  }
  if (value < PSDP_NUM_OPS) {
    return Status::invalidArgument("{}: op {} ({}) is built in, not a premul-sum op", what, value,
                                   opName(static_cast<psdp_op_t>(value)));
  }
  return Status::invalidArgument(
      "{}: op {} is not a live premul-sum op of this communicator (destroyed, or created on another one)", what, value);
}

}  // namespace

Result<psdp_op_t> CustomOps::createPremulSum(const void* scalar, psdp_dtype_t dtype) {
  if (scalar == nullptr) return Status::invalidArgument("premul-sum op: scalar is NULL");
  if (dtypeSize(dtype) == 0) return Status::invalidArgument("premul-sum op: unknown dtype {}", static_cast<int>(dtype));
  ReduceKernel kernel = makePremulSumKernel(dtype, scalar);
  if (!kernel.isValid()) return Status::internal("premul-sum op: no kernel for {}", dtypeName(dtype));
  int value = next_op.fetch_add(1, std::memory_order_relaxed);
  // PSDP_OP_MAX_ENUM is the enum's own bound and never an op.
  if (value < PSDP_NUM_OPS || value >= std::numeric_limits<int>::max()) {
    next_op.store(std::numeric_limits<int>::max(), std::memory_order_relaxed);
    return Status::unsupported("premul-sum op: every op value of this process has been used");
  }
  std::lock_guard lock(mutex_);
  ops_.emplace(value, Entry{dtype, kernel});
  return static_cast<psdp_op_t>(value);
}

Status CustomOps::destroy(psdp_op_t op) {
  std::lock_guard lock(mutex_);
  if (ops_.erase(static_cast<int>(op)) == 0) return notLivePremulSum("psdp_op_destroy", static_cast<int>(op));
  return Status::ok();
}

Result<ReduceKernel> CustomOps::find(const char* what, psdp_dtype_t dtype, psdp_op_t op) const {
  auto value = static_cast<int>(op);
  if (dtypeSize(dtype) == 0) return Status::invalidArgument("{}: unknown dtype {}", what, static_cast<int>(dtype));
  if (value < 0) return Status::invalidArgument("{}: unknown op {}", what, value);
  if (value < PSDP_NUM_OPS) return findReduceKernel(dtype, op);
  std::lock_guard lock(mutex_);
  auto it = ops_.find(value);
  if (it == ops_.end()) return notLivePremulSum(what, value);
  if (it->second.dtype != dtype) {
    return Status::invalidArgument("{}: premul-sum op {} was created for {}, not {}", what, value,
                                   dtypeName(it->second.dtype), dtypeName(dtype));
  }
  return it->second.kernel;
}

size_t CustomOps::size() const {
  std::lock_guard lock(mutex_);
  return ops_.size();
}

}  // namespace psdp::coll
