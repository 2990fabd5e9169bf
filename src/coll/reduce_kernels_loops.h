// The kernel loops, written once and compiled once per instruction-set level: each level's translation
// unit includes this file inside its `#pragma GCC target` region, so every function here is built for that
// level. Everything is in an anonymous namespace: the copies of different levels must never be merged by
// the linker (a comdat AVX-512 copy chosen for baseline callers would fault on older CPUs).
//
// REQUIRES: <cstddef>, <cstdint>, <cstring>, <type_traits>, coll/half.h and coll/reduce_kernels_table.h are
// included first, outside any target pragma (this file includes nothing, so that no library header is
// compiled for a level by accident).
//
// The loops are built with -O3 (see CMakeLists.txt) so that GCC vectorises them: restrict pointers and plain
// indexed loops with inlined, branch-free bodies leave it nothing to prove. Elementwise float ops are
// vectorised without -ffast-math because no reduction is reordered: every dst[i] depends on a[i], b[i] only.
// -ffp-contract=off keeps premul-sum's product rounded before the add on levels with FMA.
//
// Each dtype is a Storage (the element as stored, and the type it is computed in), each op a functor on
// the compute type; one template instantiates every (dtype, op) pair. float16 and bfloat16 also take a
// Lanes policy (below) for an explicit vector loop, because GCC cannot vectorise their conversions well.
// The scalar tail of every loop uses the coll/half.h conversions, so each level must match them bit for bit.

namespace psdp::coll {
namespace {

// A Lanes policy gives explicit vectors of kCount floats for one 16-bit type: Vec (a GCC vector type),
// broadcast(float) -> Vec, load(const uint16_t*) -> Vec, store(uint16_t*, Vec); unaligned. NoLanes
// (kCount 0) leaves the type to the compiler's vectoriser, for portable builds.
struct NoLanes {
  static constexpr size_t kCount = 0;
  using Vec = float;
};

template <typename T>
struct Native {
  using Stored = T;
  using Compute = T;
  using Vec = T;
  static constexpr size_t kLanes = 0;
  static T load(T x) { return x; }
  static T store(T x) { return x; }
};

// float16 or bfloat16: the scalar conversions of coll/half.h, and the vector ones of L.
template <float (*Load)(uint16_t), uint16_t (*Store)(float), typename L>
struct Half {
  using Stored = uint16_t;
  using Compute = float;
  using Vec = typename L::Vec;
  static constexpr size_t kLanes = L::kCount;
  static float load(uint16_t x) { return Load(x); }
  static uint16_t store(float x) { return Store(x); }
  static Vec loadVec(const uint16_t* p) { return L::load(p); }
  static void storeVec(uint16_t* p, Vec v) { L::store(p, v); }
  static Vec broadcast(float x) { return L::broadcast(x); }
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

// Ops take (partial, own, scalar); only premul-sum uses the scalar. C is the compute type or, in the
// explicit vector loops, a GCC vector of it (the select then compiles to a vector compare and blend, which
// is the same exact select as the scalar one).
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
// less ? a : b, elementwise; a Lanes policy whose Vec is not a GCC vector overloads it.
template <typename C>
C select(C a, C b, decltype(a < b) less) {
  return less ? a : b;
}

struct Min {
  template <typename C>
  static C apply(C p, C o, C) {
    return select(o, p, o < p);
  }
};
struct Max {
  template <typename C>
  static C apply(C p, C o, C) {
    return select(o, p, p < o);
  }
};
struct PremulSum {
  template <typename C>
  static C apply(C p, C o, C s) {
    return add(p, mul(s, o));
  }
};

// The explicit vector part of a loop over whole vectors; returns how many elements it did. No restrict:
// each step loads its inputs before it stores, so dst may be exactly a or b.
template <typename S, typename F>
size_t mapVec(typename S::Stored* dst, const typename S::Stored* a, const typename S::Stored* b, size_t count, F f) {
  size_t i = 0;
  if constexpr (S::kLanes > 0) {
    for (; i + 2 * S::kLanes <= count; i += 2 * S::kLanes) {
      auto x0 = f(S::loadVec(a + i), S::loadVec(b + i));
      auto x1 = f(S::loadVec(a + i + S::kLanes), S::loadVec(b + i + S::kLanes));
      S::storeVec(dst + i, x0);
      S::storeVec(dst + i + S::kLanes, x1);
    }
    for (; i + S::kLanes <= count; i += S::kLanes) S::storeVec(dst + i, f(S::loadVec(a + i), S::loadVec(b + i)));
  }
  return i;
}

template <typename S, typename Op>
size_t combineVec(typename S::Stored* dst, const typename S::Stored* p, const typename S::Stored* o, size_t count,
                  typename S::Compute s) {
  if constexpr (S::kLanes > 0) {
    const auto sv = S::broadcast(s);
    return mapVec<S>(dst, p, o, count, [sv](auto pv, auto ov) { return Op::apply(pv, ov, sv); });
  }
  return 0;
}

template <typename S, typename Op>
void combineOutOfPlace(typename S::Stored* __restrict dst, const typename S::Stored* __restrict p,
                       const typename S::Stored* __restrict o, size_t count, typename S::Compute s) {
  for (size_t i = combineVec<S, Op>(dst, p, o, count, s); i < count; ++i) {
    dst[i] = S::store(Op::apply(S::load(p[i]), S::load(o[i]), s));
  }
}

template <typename S, typename Op>
void combineIntoPartial(typename S::Stored* __restrict acc, const typename S::Stored* __restrict o, size_t count,
                        typename S::Compute s) {
  for (size_t i = combineVec<S, Op>(acc, acc, o, count, s); i < count; ++i) {
    acc[i] = S::store(Op::apply(S::load(acc[i]), S::load(o[i]), s));
  }
}

template <typename S, typename Op>
void combineIntoOwn(typename S::Stored* __restrict acc, const typename S::Stored* __restrict p, size_t count,
                    typename S::Compute s) {
  for (size_t i = combineVec<S, Op>(acc, p, acc, count, s); i < count; ++i) {
    acc[i] = S::store(Op::apply(S::load(p[i]), S::load(acc[i]), s));
  }
}

// Exact aliasing is split out because restrict forbids it; operand order is kept (premul-sum is not
// commutative).
template <typename S, typename Op>
void combine(void* dst, const void* partial, const void* own, size_t count, const KernelScalar& scalar) {
  using T = typename S::Stored;
  auto* out = static_cast<T*>(dst);
  const auto* p = static_cast<const T*>(partial);
  const auto* o = static_cast<const T*>(own);
  // Not scalar.as(): a template defined outside this file must not be instantiated for a level.
  typename S::Compute s;
  std::memcpy(&s, scalar.bytes, sizeof(s));
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
  size_t i = 0;
  if constexpr (S::kLanes > 0) {
    const auto n = S::broadcast(static_cast<float>(nranks));
    i = mapVec<S>(d, d, d, count, [n](auto x, auto) { return x / n; });
  }
  for (; i < count; ++i) d[i] = S::store(divide(S::load(d[i]), nranks));
}

template <typename S>
size_t scaleVec(typename S::Stored* dst, const typename S::Stored* src, size_t count, typename S::Compute s) {
  if constexpr (S::kLanes > 0) {
    const auto sv = S::broadcast(s);
    return mapVec<S>(dst, src, src, count, [sv](auto x, auto) { return sv * x; });
  }
  return 0;
}

template <typename S>
void scaleLoop(typename S::Stored* __restrict dst, const typename S::Stored* __restrict src, size_t count,
               typename S::Compute s) {
  for (size_t i = scaleVec<S>(dst, src, count, s); i < count; ++i) dst[i] = S::store(mul(s, S::load(src[i])));
}

template <typename S>
void scaleInPlace(typename S::Stored* __restrict data, size_t count, typename S::Compute s) {
  for (size_t i = scaleVec<S>(data, data, count, s); i < count; ++i) data[i] = S::store(mul(s, S::load(data[i])));
}

template <typename S>
void scale(void* dst, const void* src, size_t count, const KernelScalar& scalar) {
  using T = typename S::Stored;
  auto* out = static_cast<T*>(dst);
  const auto* in = static_cast<const T*>(src);
  // Not scalar.as(): a template defined outside this file must not be instantiated for a level.
  typename S::Compute s;
  std::memcpy(&s, scalar.bytes, sizeof(s));
  if (out == in) {
    scaleInPlace<S>(out, count, s);
  } else {
    scaleLoop<S>(out, in, count, s);
  }
}

template <typename S>
constexpr DtypeKernelFns fnsOf() {
  DtypeKernelFns fns;
  fns.sum = &combine<S, Sum>;
  fns.prod = &combine<S, Prod>;
  fns.min = &combine<S, Min>;
  fns.max = &combine<S, Max>;
  fns.premul_sum = &combine<S, PremulSum>;
  fns.avg_finalize = &finalizeAvg<S>;
  fns.premul_scale = &scale<S>;
  return fns;
}

template <typename Fp16Lanes, typename Bf16Lanes>
constexpr KernelFnTable makeKernelFnTable() {
  KernelFnTable table;
  table.dtypes[PSDP_INT8] = fnsOf<Native<int8_t>>();
  table.dtypes[PSDP_UINT8] = fnsOf<Native<uint8_t>>();
  table.dtypes[PSDP_INT32] = fnsOf<Native<int32_t>>();
  table.dtypes[PSDP_UINT32] = fnsOf<Native<uint32_t>>();
  table.dtypes[PSDP_INT64] = fnsOf<Native<int64_t>>();
  table.dtypes[PSDP_UINT64] = fnsOf<Native<uint64_t>>();
  table.dtypes[PSDP_FLOAT16] = fnsOf<Half<fp16ToFloat, floatToFp16, Fp16Lanes>>();
  table.dtypes[PSDP_BFLOAT16] = fnsOf<Half<bf16ToFloat, floatToBf16, Bf16Lanes>>();
  table.dtypes[PSDP_FLOAT32] = fnsOf<Native<float>>();
  table.dtypes[PSDP_FLOAT64] = fnsOf<Native<double>>();
  return table;
}

}  // namespace
}  // namespace psdp::coll
