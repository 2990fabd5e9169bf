// Elementwise reduction kernels, looked up once per operation by (dtype, op). The ring algorithms only ever
// see a ReduceKernel, so a new dtype or op touches the kernel files (reduce_kernels*) and nothing else.
//
// Semantics, for every dtype: integer sum and prod wrap (two's complement, as NCCL); avg is a sum whose
// final result is divided by nranks (integers truncate toward zero, floats divide); float16 and bfloat16
// are computed in float32 and rounded once per combine, to nearest even. Float min/max are plain
// comparisons (own < partial ? own : partial), so a NaN operand is not reliably propagated; and where the
// application has set denormals-are-zero (MXCSR.DAZ), a float32/float64/bfloat16 subnormal operand may come
// back as the zero the hardware compared it as (min/max instructions) or as itself. A NaN result of
// a float16/bfloat16 op keeps its sign and top payload bits and is quiet (coll/half.h); where both operands
// of a sum or product are NaN, which one's payload survives is unspecified (the compiler may swap them).
//
// Each kernel exists once per instruction-set level (KernelIsa); every level gives bit-identical results,
// and the best one the CPU supports is chosen once, at the first lookup.
//
// Premul-sum (makePremulSumKernel): the result is the sum over ranks of scalar_r * input_r, where each
// rank r uses its own scalar. The ring applies a rank's scalar exactly once to each of its input blocks:
// blocks the rank sends unreduced (ring step 0) are scaled into the send slot first (scaleInput), and
// blocks it reduces are scaled inside combine, whose second operand is always this rank's own input.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <cstring>

namespace psdp::coll {

// The scalar of a premul-sum op, held as the kernel's compute type (the dtype itself, or float for
// float16/bfloat16) so that the loops convert it once, not per element.
struct KernelScalar {
  alignas(8) unsigned char bytes[8] = {};

  template <typename T>
  T as() const {
    static_assert(sizeof(T) <= sizeof(bytes));
    T value;
    std::memcpy(&value, bytes, sizeof(T));
    return value;
  }
};

// dst[i] = partial[i] (op) own[i] for i < count, where `own` is this rank's input (scaled by premul-sum)
// and `partial` a result so far. dst may be exactly partial or exactly own (in place); no other overlap.
using CombineFn = void (*)(void* dst, const void* partial, const void* own, size_t count, const KernelScalar& s);
// Applied once to every element of a final result (AVG divides by nranks there); null when the op needs
// nothing after the last combine.
using FinalizeFn = void (*)(void* data, size_t count, int nranks);
// dst[i] = scalar * src[i]; dst may be exactly src.
using ScaleFn = void (*)(void* dst, const void* src, size_t count, const KernelScalar& s);

struct ReduceKernel {
  CombineFn combine_fn = nullptr;
  FinalizeFn finalize = nullptr;
  ScaleFn scale_fn = nullptr;  // non-null for premul-sum only
  KernelScalar scalar;

  bool isValid() const { return combine_fn != nullptr; }
  void combine(void* dst, const void* partial, const void* own, size_t count) const {
    combine_fn(dst, partial, own, count, scalar);
  }
  // Whether input that leaves this rank without a combine must first go through scaleInput.
  bool scalesInput() const { return scale_fn != nullptr; }
  void scaleInput(void* dst, const void* src, size_t count) const { scale_fn(dst, src, count, scalar); }
};

// The kernel for a built-in (dtype, op); isValid() is false for out-of-range values.
ReduceKernel findReduceKernel(psdp_dtype_t dtype, psdp_op_t op);

// The premul-sum kernel for `dtype` with `*scalar` (one element of dtype, read now). isValid() is false
// for an unknown dtype.
ReduceKernel makePremulSumKernel(psdp_dtype_t dtype, const void* scalar);

// The instruction-set levels the kernels are compiled for, each a superset of the one before. Baseline is
// the portable build (plain loops, vectorised by the compiler for the target's baseline ISA); the x86
// levels exist only in x86-64 GCC builds: kAvx2 needs AVX2 and F16C, kAvx512 also AVX-512 F/BW/VL/DQ, and
// kAvx512Bf16 also AVX512_BF16 (it differs from kAvx512 in bfloat16 narrowing only).
enum class KernelIsa { kBaseline, kAvx2, kAvx512, kAvx512Bf16 };
inline constexpr int kNumKernelIsas = 4;

const char* kernelIsaName(KernelIsa isa);
// Whether this build has the level and this CPU (and OS) can run it.
bool kernelIsaSupported(KernelIsa isa);
// The level findReduceKernel uses: the best supported one, detected once. Thread-safe.
KernelIsa selectedKernelIsa();

// The lookups above at a given level, for tests and benchmarks that compare levels. isValid() is false
// when !kernelIsaSupported(isa).
ReduceKernel findReduceKernel(psdp_dtype_t dtype, psdp_op_t op, KernelIsa isa);
ReduceKernel makePremulSumKernel(psdp_dtype_t dtype, const void* scalar, KernelIsa isa);

}  // namespace psdp::coll
