// The premul-sum ops of one communicator (psdp_op_create_premul_sum): op values >= PSDP_NUM_OPS, each tied
// to one dtype and scalar. Values come from a process-wide counter and are never reused, so an op of
// another communicator, or one already destroyed, is found in no table and reported as such.
//
// Thread safety: every method may be called from any thread; a collective resolves its op once, when it
// is posted, and keeps its own copy of the kernel, so destroying an op never affects a posted collective.
#pragma once

#include <psdp/psdp.h>

#include <mutex>
#include <unordered_map>

#include "base/status.h"
#include "coll/reduce_kernels.h"

namespace psdp::coll {

class CustomOps {
 public:
  CustomOps() = default;
  CustomOps(const CustomOps&) = delete;
  CustomOps& operator=(const CustomOps&) = delete;

  // `scalar` points to one element of `dtype`, read now. Errors: invalid argument (unknown dtype, null
  // scalar), unsupported (the process has used up every op value).
  Result<psdp_op_t> createPremulSum(const void* scalar, psdp_dtype_t dtype);
  // Errors: invalid argument (not a live op of this table).
  Status destroy(psdp_op_t op);
  // The kernel of a built-in op or of a live op of this table used with its own dtype. Errors: invalid
  // argument naming what is wrong. `what` names the collective in messages.
  Result<ReduceKernel> find(const char* what, psdp_dtype_t dtype, psdp_op_t op) const;
  // Live ops, for tests.
  size_t size() const;

 private:
  struct Entry {
    psdp_dtype_t dtype;
    ReduceKernel kernel;
  };

  mutable std::mutex mutex_;
  std::unordered_map<int, Entry> ops_;  // guarded by mutex_
};

}  // namespace psdp::coll
