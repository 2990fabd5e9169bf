// The kernel functions of one instruction-set level, as plain function pointers. Each level's translation
// unit (reduce_kernels.cc for the baseline, reduce_kernels_avx2.cc, reduce_kernels_avx512.cc) defines its
// tables, constant-initialised so that no code of a level the CPU may lack ever runs before dispatch;
// reduce_kernels.cc picks a table and builds ReduceKernel values from it. Internal to src/coll.
#pragma once

#include <psdp/psdp.h>

#include "coll/reduce_kernels.h"

namespace psdp::coll {

struct DtypeKernelFns {
  CombineFn sum = nullptr;  // also avg's combine
  CombineFn prod = nullptr;
  CombineFn min = nullptr;
  CombineFn max = nullptr;
  CombineFn premul_sum = nullptr;
  FinalizeFn avg_finalize = nullptr;
  ScaleFn premul_scale = nullptr;
};

struct KernelFnTable {
  DtypeKernelFns dtypes[PSDP_NUM_DTYPES];
};

extern const KernelFnTable kBaselineKernelFns;
// Defined only in x86-64 GCC builds (PSDP_KERNELS_X86 below).
extern const KernelFnTable kAvx2KernelFns;
extern const KernelFnTable kAvx512KernelFns;
extern const KernelFnTable kAvx512Bf16KernelFns;

}  // namespace psdp::coll

// The x86 levels need GCC's `#pragma GCC target` and __builtin_cpu_supports.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PSDP_KERNELS_X86 1
#else
#define PSDP_KERNELS_X86 0
#endif
