// Elementwise reduction kernels, looked up once per operation by (dtype, op). The ring algorithms only ever
// see a ReduceKernel, so a new dtype or op (fp16/bf16 computed in fp32, min/max/prod, avg) is one new
// table row in reduce_kernels.cc and nothing else.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>

namespace psdp::coll {

// dst[i] = a[i] (op) b[i] for i < count. dst may be exactly a or exactly b (in place); no other overlap.
using CombineFn = void (*)(void* dst, const void* a, const void* b, size_t count);
// Applied once to every element of a final result (AVG divides by nranks there); null when the op needs
// nothing after the last combine.
using FinalizeFn = void (*)(void* data, size_t count, int nranks);

struct ReduceKernel {
  CombineFn combine = nullptr;
  FinalizeFn finalize = nullptr;

  bool isValid() const { return combine != nullptr; }
};

// The kernel for (dtype, op); isValid() is false for pairs not implemented and for out-of-range values.
ReduceKernel findReduceKernel(psdp_dtype_t dtype, psdp_op_t op);

}  // namespace psdp::coll
