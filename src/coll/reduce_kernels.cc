// Built with -O3 (see CMakeLists.txt) so that GCC vectorises the loops: restrict pointers and plain
// indexed loops with no calls leave it nothing to prove. Elementwise float adds are vectorised without
// -ffast-math because no reduction is reordered: every dst[i] is a single a[i] + b[i].
#include "coll/reduce_kernels.h"

#include <array>
#include <cstdint>

namespace psdp::coll {
namespace {

template <typename T>
struct Sum {
  static T apply(T x, T y) { return x + y; }
};

// Signed integer sums wrap in two's complement, as in NCCL and MPI implementations, instead of being
// undefined behaviour on overflow.
template <>
struct Sum<int32_t> {
  static int32_t apply(int32_t x, int32_t y) {
    return static_cast<int32_t>(static_cast<uint32_t>(x) + static_cast<uint32_t>(y));
  }
};

template <typename T, typename Op>
void combineOutOfPlace(T* __restrict dst, const T* __restrict a, const T* __restrict b, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Op::apply(a[i], b[i]);
}

template <typename T, typename Op>
void combineInPlace(T* __restrict acc, const T* __restrict b, size_t count) {
  for (size_t i = 0; i < count; ++i) acc[i] = Op::apply(acc[i], b[i]);
}

// Exact aliasing is split out because restrict forbids it. Every op in the table is commutative, so
// dst == b is the in-place loop with the operands swapped.
template <typename T, typename Op>
void combine(void* dst, const void* a, const void* b, size_t count) {
  T* out = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  if (out == x) {
    combineInPlace<T, Op>(out, y, count);
  } else if (out == y) {
    combineInPlace<T, Op>(out, x, count);
  } else {
    combineOutOfPlace<T, Op>(out, x, y, count);
  }
}

using KernelTable = std::array<std::array<ReduceKernel, PSDP_NUM_OPS>, PSDP_NUM_DTYPES>;

constexpr KernelTable makeKernelTable() {
  KernelTable table{};
  table[PSDP_FLOAT32][PSDP_SUM] = ReduceKernel{&combine<float, Sum<float>>, nullptr};
  table[PSDP_INT32][PSDP_SUM] = ReduceKernel{&combine<int32_t, Sum<int32_t>>, nullptr};
  return table;
}

constexpr KernelTable kKernels = makeKernelTable();

}  // namespace

ReduceKernel findReduceKernel(psdp_dtype_t dtype, psdp_op_t op) {
  auto d = static_cast<int>(dtype);
  auto o = static_cast<int>(op);
  if (d < 0 || d >= PSDP_NUM_DTYPES || o < 0 || o >= PSDP_NUM_OPS) return ReduceKernel{};
  return kKernels[static_cast<size_t>(d)][static_cast<size_t>(o)];
}

}  // namespace psdp::coll
