// The baseline kernels (built for the target's baseline ISA, so they run anywhere the library runs) and the
// dispatch between instruction-set levels. The loops themselves are in reduce_kernels_loops.h; the x86
// levels are built from the same loops in reduce_kernels_avx2.cc and reduce_kernels_avx512.cc.
//
// Dispatch is chosen once, at the first lookup, and only changes which function pointers a ReduceKernel
// holds: the ring algorithms look a kernel up once per operation and never see the level.
#include "coll/reduce_kernels.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "coll/half.h"
#include "coll/reduce_kernels_table.h"
// After every header it needs (see its REQUIRES), with no target pragma: the portable build.
#include "coll/reduce_kernels_loops.h"

namespace psdp::coll {

constinit const KernelFnTable kBaselineKernelFns = makeKernelFnTable<NoLanes, NoLanes>();

namespace {

bool knownDtype(psdp_dtype_t dtype) {
  auto d = static_cast<int>(dtype);
  return d >= 0 && d < PSDP_NUM_DTYPES;
}

KernelIsa detectKernelIsa() {
#if PSDP_KERNELS_X86
  // Safe before static constructors have run; __builtin_cpu_supports also checks that the OS saves the
  // AVX and AVX-512 register state (XCR0), not just CPUID.
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512 && __builtin_cpu_supports("avx512bf16")) return KernelIsa::kAvx512Bf16;
  if (avx512) return KernelIsa::kAvx512;
  if (avx2) return KernelIsa::kAvx2;
#endif
  return KernelIsa::kBaseline;
}

const KernelFnTable* tableOf(KernelIsa isa) {
  if (!kernelIsaSupported(isa)) return nullptr;
  switch (isa) {
    case KernelIsa::kBaseline: return &kBaselineKernelFns;
#if PSDP_KERNELS_X86
    case KernelIsa::kAvx2: return &kAvx2KernelFns;
    case KernelIsa::kAvx512: return &kAvx512KernelFns;
    case KernelIsa::kAvx512Bf16: return &kAvx512Bf16KernelFns;
#endif
    default: return nullptr;
  }
}

// The premul-sum scalar as the kernel's compute type: converted once here, not per element.
template <typename Stored, typename Compute>
KernelScalar premulScalar(const void* scalar, Compute (*load)(Stored)) {
  Stored stored;
  std::memcpy(&stored, scalar, sizeof(stored));
  Compute value = load(stored);
  KernelScalar out;
  std::memcpy(out.bytes, &value, sizeof(value));
  return out;
}

template <typename T>
T identity(T x) {
  return x;
}

KernelScalar convertPremulScalar(psdp_dtype_t dtype, const void* scalar) {
  switch (dtype) {
    case PSDP_INT8: return premulScalar<int8_t>(scalar, identity<int8_t>);
    case PSDP_UINT8: return premulScalar<uint8_t>(scalar, identity<uint8_t>);
    case PSDP_INT32: return premulScalar<int32_t>(scalar, identity<int32_t>);
    case PSDP_UINT32: return premulScalar<uint32_t>(scalar, identity<uint32_t>);
    case PSDP_INT64: return premulScalar<int64_t>(scalar, identity<int64_t>);
    case PSDP_UINT64: return premulScalar<uint64_t>(scalar, identity<uint64_t>);
    case PSDP_FLOAT16: return premulScalar<uint16_t>(scalar, fp16ToFloat);
    case PSDP_BFLOAT16: return premulScalar<uint16_t>(scalar, bf16ToFloat);
    case PSDP_FLOAT32: return premulScalar<float>(scalar, identity<float>);
    case PSDP_FLOAT64: return premulScalar<double>(scalar, identity<double>);
    default: return KernelScalar{};
  }
}

}  // namespace

const char* kernelIsaName(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kBaseline: return "baseline";
    case KernelIsa::kAvx2: return "avx2";
    case KernelIsa::kAvx512: return "avx512";
    case KernelIsa::kAvx512Bf16: return "avx512bf16";
  }
  return "unknown";
}

bool kernelIsaSupported(KernelIsa isa) {
  return static_cast<int>(isa) >= 0 && static_cast<int>(isa) <= static_cast<int>(selectedKernelIsa());
}

KernelIsa selectedKernelIsa() {
  static const KernelIsa isa = detectKernelIsa();
  return isa;
}

ReduceKernel findReduceKernel(psdp_dtype_t dtype, psdp_op_t op, KernelIsa isa) {
  const KernelFnTable* table = tableOf(isa);
  if (table == nullptr || !knownDtype(dtype)) return ReduceKernel{};
  const DtypeKernelFns& fns = table->dtypes[static_cast<size_t>(dtype)];
  switch (op) {
    case PSDP_SUM: return ReduceKernel{fns.sum, nullptr, nullptr, {}};
    case PSDP_PROD: return ReduceKernel{fns.prod, nullptr, nullptr, {}};
    case PSDP_MIN: return ReduceKernel{fns.min, nullptr, nullptr, {}};
    case PSDP_MAX: return ReduceKernel{fns.max, nullptr, nullptr, {}};
    case PSDP_AVG: return ReduceKernel{fns.sum, fns.avg_finalize, nullptr, {}};
    default: return ReduceKernel{};
  }
}

ReduceKernel makePremulSumKernel(psdp_dtype_t dtype, const void* scalar, KernelIsa isa) {
  const KernelFnTable* table = tableOf(isa);
  if (table == nullptr || !knownDtype(dtype) || scalar == nullptr) return ReduceKernel{};
  const DtypeKernelFns& fns = table->dtypes[static_cast<size_t>(dtype)];
  return ReduceKernel{fns.premul_sum, nullptr, fns.premul_scale, convertPremulScalar(dtype, scalar)};
}

ReduceKernel findReduceKernel(psdp_dtype_t dtype, psdp_op_t op) {
  return findReduceKernel(dtype, op, selectedKernelIsa());
}

ReduceKernel makePremulSumKernel(psdp_dtype_t dtype, const void* scalar) {
  return makePremulSumKernel(dtype, scalar, selectedKernelIsa());
}

}  // namespace psdp::coll
