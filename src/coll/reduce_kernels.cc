// Built with -O3 (see CMakeLists.txt) so that GCC vectorises the loops: restrict pointers and plain
// indexed loops with inlined, branch-free bodies leave it nothing to prove. Elementwise float ops are
// vectorised without -ffast-math because no reduction is reordered: every dst[i] depends on a[i], b[i] only.
//
// Each dtype is a Storage (the element as stored, and the type it is computed in), each op a functor on
// the compute type; one template instantiates every (dtype, op) pair.
#include "coll/reduce_kernels.h"

#include <array>
#include <cstdint>
#include <type_traits>

#include "coll/half.h"

namespace psdp::coll {
namespace {

template <typename T>
struct Native {
  using Stored = T;
  using Compute = T;
  static T load(T x) { return x; }
  static T store(T x) { return x; }
};

struct Bf16 {
  using Stored = uint16_t;
  using Compute = float;
  static float load(uint16_t x) { return bf16ToFloat(x); }
  static uint16_t store(float x) { return floatToBf16(x); }
};

struct Fp16 {
  using Stored = uint16_t;
  using Compute = float;
  static float load(uint16_t x) { return fp16ToFloat(x); }
  static uint16_t store(float x) { return floatToFp16(x); }
};

// Integer + and * in an unsigned type of at least int's width, so that they wrap instead of being
// undefined on overflow (narrow types would otherwise be promoted to signed int). Converting back to a
// signed type is modular since C++20.
template <typename T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
T add(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<Wide<T>>(x) + static_cast<Wide<T>>(y));
  } else {
    return x + y;
  }
}

template <typename T>
T mul(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<Wide<T>>(x) * static_cast<Wide<T>>(y));
  } else {
    return x * y;
  }
}

// Ops take (partial, own, scalar); only premul-sum uses the scalar.
struct Sum {
  template <typename C>
  static C apply(C p, C o, C) {
    return add(p, o);
  }
};
struct Prod {
  template <typename C>
  static C apply(C p, C o, C) {
    return mul(p, o);
  }
};
struct Min {
  template <typename C>
  static C apply(C p, C o, C) {
    return o < p ? o : p;
  }
};
struct Max {
  template <typename C>
  static C apply(C p, C o, C) {
    return p < o ? o : p;
  }
};
struct PremulSum {
  template <typename C>
  static C apply(C p, C o, C s) {
    return add(p, mul(s, o));
  }
};

template <typename S, typename Op>
void combineOutOfPlace(typename S::Stored* __restrict dst, const typename S::Stored* __restrict p,
                       const typename S::Stored* __restrict o, size_t count, typename S::Compute s) {
  for (size_t i = 0; i < count; ++i) dst[i] = S::store(Op::apply(S::load(p[i]), S::load(o[i]), s));
}

template <typename S, typename Op>
void combineIntoPartial(typename S::Stored* __restrict acc, const typename S::Stored* __restrict o, size_t count,
                        typename S::Compute s) {
  for (size_t i = 0; i < count; ++i) acc[i] = S::store(Op::apply(S::load(acc[i]), S::load(o[i]), s));
}

template <typename S, typename Op>
void combineIntoOwn(typename S::Stored* __restrict acc, const typename S::Stored* __restrict p, size_t count,
                    typename S::Compute s) {
  for (size_t i = 0; i < count; ++i) acc[i] = S::store(Op::apply(S::load(p[i]), S::load(acc[i]), s));
}

// Exact aliasing is split out because restrict forbids it; operand order is kept (premul-sum is not
// commutative).
template <typename S, typename Op>
void combine(void* dst, const void* partial, const void* own, size_t count, const KernelScalar& scalar) {
  using T = typename S::Stored;
  auto* out = static_cast<T*>(dst);
  const auto* p = static_cast<const T*>(partial);
  const auto* o = static_cast<const T*>(own);
  const auto s = scalar.as<typename S::Compute>();
  if (out == p) {
    combineIntoPartial<S, Op>(out, o, count, s);
  } else if (out == o) {
    combineIntoOwn<S, Op>(out, p, count, s);
  } else {
    combineOutOfPlace<S, Op>(out, p, o, count, s);
  }
}

// Integer division truncates toward zero, as NCCL's integer avg; the wrapped sum is divided as it is. It
// is done in 64 bits because nranks need not fit the element type (int8 with 200 ranks).
template <typename C>
C divide(C x, int nranks) {
  if constexpr (std::is_integral_v<C>) {
    using W = std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>;
    return static_cast<C>(static_cast<W>(x) / static_cast<W>(nranks));
  } else {
    return x / static_cast<C>(nranks);
  }
}

template <typename S>
void finalizeAvg(void* data, size_t count, int nranks) {
  auto* d = static_cast<typename S::Stored*>(data);
  for (size_t i = 0; i < count; ++i) d[i] = S::store(divide(S::load(d[i]), nranks));
}

template <typename S>
void scaleLoop(typename S::Stored* __restrict dst, const typename S::Stored* __restrict src, size_t count,
               typename S::Compute s) {
  for (size_t i = 0; i < count; ++i) dst[i] = S::store(mul(s, S::load(src[i])));
}

template <typename S>
void scaleInPlace(typename S::Stored* __restrict data, size_t count, typename S::Compute s) {
  for (size_t i = 0; i < count; ++i) data[i] = S::store(mul(s, S::load(data[i])));
}

template <typename S>
void scale(void* dst, const void* src, size_t count, const KernelScalar& scalar) {
  using T = typename S::Stored;
  auto* out = static_cast<T*>(dst);
  const auto* in = static_cast<const T*>(src);
  const auto s = scalar.as<typename S::Compute>();
  if (out == in) {
    scaleInPlace<S>(out, count, s);
  } else {
    scaleLoop<S>(out, in, count, s);
  }
}

template <typename S>
constexpr std::array<ReduceKernel, PSDP_NUM_OPS> opsOf() {
  std::array<ReduceKernel, PSDP_NUM_OPS> row{};
  row[PSDP_SUM] = ReduceKernel{&combine<S, Sum>, nullptr, nullptr, {}};
  row[PSDP_PROD] = ReduceKernel{&combine<S, Prod>, nullptr, nullptr, {}};
  row[PSDP_MIN] = ReduceKernel{&combine<S, Min>, nullptr, nullptr, {}};
  row[PSDP_MAX] = ReduceKernel{&combine<S, Max>, nullptr, nullptr, {}};
  row[PSDP_AVG] = ReduceKernel{&combine<S, Sum>, &finalizeAvg<S>, nullptr, {}};
  return row;
}

// The premul-sum kernel of one dtype, with the scalar converted from the dtype to the compute type.
template <typename S>
ReduceKernel premulOf(const void* scalar) {
  typename S::Stored stored;
  std::memcpy(&stored, scalar, sizeof(stored));
  typename S::Compute value = S::load(stored);
  ReduceKernel kernel{&combine<S, PremulSum>, nullptr, &scale<S>, {}};
  std::memcpy(kernel.scalar.bytes, &value, sizeof(value));
  return kernel;
}

using KernelTable = std::array<std::array<ReduceKernel, PSDP_NUM_OPS>, PSDP_NUM_DTYPES>;
using PremulTable = std::array<ReduceKernel (*)(const void*), PSDP_NUM_DTYPES>;

constexpr KernelTable makeKernelTable() {
  KernelTable table{};
  table[PSDP_INT8] = opsOf<Native<int8_t>>();
  table[PSDP_UINT8] = opsOf<Native<uint8_t>>();
  table[PSDP_INT32] = opsOf<Native<int32_t>>();
  table[PSDP_UINT32] = opsOf<Native<uint32_t>>();
  table[PSDP_INT64] = opsOf<Native<int64_t>>();
  table[PSDP_UINT64] = opsOf<Native<uint64_t>>();
  table[PSDP_FLOAT16] = opsOf<Fp16>();
  table[PSDP_BFLOAT16] = opsOf<Bf16>();
  table[PSDP_FLOAT32] = opsOf<Native<float>>();
  table[PSDP_FLOAT64] = opsOf<Native<double>>();
  return table;
}

constexpr PremulTable makePremulTable() {
  PremulTable table{};
  table[PSDP_INT8] = &premulOf<Native<int8_t>>;
  table[PSDP_UINT8] = &premulOf<Native<uint8_t>>;
  table[PSDP_INT32] = &premulOf<Native<int32_t>>;
  table[PSDP_UINT32] = &premulOf<Native<uint32_t>>;
  table[PSDP_INT64] = &premulOf<Native<int64_t>>;
  table[PSDP_UINT64] = &premulOf<Native<uint64_t>>;
  table[PSDP_FLOAT16] = &premulOf<Fp16>;
  table[PSDP_BFLOAT16] = &premulOf<Bf16>;
  table[PSDP_FLOAT32] = &premulOf<Native<float>>;
  table[PSDP_FLOAT64] = &premulOf<Native<double>>;
  return table;
}

constexpr KernelTable kKernels = makeKernelTable();
constexpr PremulTable kPremul = makePremulTable();

bool knownDtype(psdp_dtype_t dtype) {
  auto d = static_cast<int>(dtype);
  return d >= 0 && d < PSDP_NUM_DTYPES;
}

}  // namespace

ReduceKernel findReduceKernel(psdp_dtype_t dtype, psdp_op_t op) {
  auto o = static_cast<int>(op);
  if (!knownDtype(dtype) || o < 0 || o >= PSDP_NUM_OPS) return ReduceKernel{};
  return kKernels[static_cast<size_t>(dtype)][static_cast<size_t>(o)];
}

ReduceKernel makePremulSumKernel(psdp_dtype_t dtype, const void* scalar) {
  if (!knownDtype(dtype) || scalar == nullptr) return ReduceKernel{};
  return kPremul[static_cast<size_t>(dtype)](scalar);
}

}  // namespace psdp::coll
