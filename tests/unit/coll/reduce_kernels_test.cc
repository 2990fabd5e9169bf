// Every (dtype, op) kernel, at every instruction-set level this CPU runs, against a scalar model of the
// same semantics. The models compute exactly (integers in 64-bit wrapping arithmetic, floats in their own
// precision, float16/bfloat16 in float32 then rounded by the conversions that half_test.cc checks
// exhaustively). Two kinds of data: small integer values, in and out of place, at every count up to a few
// vectors and at misaligned starts (so that vector bodies, unrolled pairs and scalar tails all run); and
// random bit patterns, including every float16/bfloat16 pattern, so that NaN, infinity, subnormal, overflow
// and rounding cases agree bit for bit between the vector conversions and coll/half.h.
#include "coll/reduce_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "coll/collectives.h"
#include "coll/half.h"

namespace psdp::coll {
namespace {

constexpr int kAvgRanks = 3;
constexpr size_t kMaxOffset = 3;

// Every count from 0 to 67 (past two 32-element vector pairs of the widest level, so every tail length
// runs), plus one long enough for many unrolled iterations.
std::vector<size_t> testCounts() {
  std::vector<size_t> counts;
  for (size_t c = 0; c <= 67; ++c) counts.push_back(c);
  counts.push_back(1000);
  return counts;
}

template <typename T>
struct IntModel {
  using Stored = T;
  static T make(int v) { return static_cast<T>(v); }
  static T canon(T x) { return x; }
  static bool isNan(T) { return false; }
  static T sum(T a, T b) { return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
  static T prod(T a, T b) { return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
  static T premul(T p, T o, T s) { return sum(p, prod(s, o)); }
  static T avg(T x, int n) {
    if constexpr (std::is_signed_v<T>) return static_cast<T>(static_cast<int64_t>(x) / n);
    return static_cast<T>(static_cast<uint64_t>(x) / static_cast<uint64_t>(n));
  }
  static bool less(T a, T b) { return a < b; }
};

template <typename F>
struct FloatModel {
  using Stored = F;
  static F make(int v) { return static_cast<F>(v); }
  static F canon(F x) { return x; }
  static bool isNan(F x) { return std::isnan(x); }
  static F sum(F a, F b) { return a + b; }
  static F prod(F a, F b) { return a * b; }
  static F premul(F p, F o, F s) { return p + s * o; }
  static F avg(F x, int n) { return x / static_cast<F>(n); }
  static bool less(F a, F b) { return a < b; }
};

// Computed in float and rounded once, as the kernels do; canon() is the trip through float that a selected
// min/max operand takes (a signalling NaN comes back quiet).
template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
struct HalfModel {
  using Stored = uint16_t;
  static uint16_t make(int v) { return Store(static_cast<float>(v)); }
  static uint16_t canon(uint16_t x) { return Store(Load(x)); }
  static bool isNan(uint16_t x) { return std::isnan(Load(x)); }
  static uint16_t sum(uint16_t a, uint16_t b) { return Store(Load(a) + Load(b)); }
  static uint16_t prod(uint16_t a, uint16_t b) { return Store(Load(a) * Load(b)); }
  static uint16_t premul(uint16_t p, uint16_t o, uint16_t s) { return Store(Load(p) + Load(s) * Load(o)); }
  static uint16_t avg(uint16_t x, int n) { return Store(Load(x) / static_cast<float>(n)); }
  static bool less(uint16_t a, uint16_t b) { return Load(a) < Load(b); }
};
using Fp16Model = HalfModel<fp16ToFloat, floatToFp16>;
using Bf16Model = HalfModel<bf16ToFloat, floatToBf16>;

enum class Case { kSum, kProd, kMin, kMax, kAvg, kPremulTwo, kPremulMinusOne };
constexpr Case kCases[] = {Case::kSum, Case::kProd,      Case::kMin,           Case::kMax,
                           Case::kAvg, Case::kPremulTwo, Case::kPremulMinusOne};

const char* caseName(Case c) {
  const char* names[] = {"sum", "prod", "min", "max", "avg", "premul-sum x2", "premul-sum x-1"};
  return names[static_cast<int>(c)];
}

template <typename M>
typename M::Stored premulScalarOf(Case c) {
  return M::make(c == Case::kPremulTwo ? 2 : -1);
}

// The model of one combine (plus avg's finalize): partial p, own input o.
template <typename M>
typename M::Stored expectOne(Case c, typename M::Stored p, typename M::Stored o) {
  switch (c) {
    case Case::kSum: return M::sum(p, o);
    case Case::kProd: return M::prod(p, o);
    case Case::kMin: return M::canon(M::less(o, p) ? o : p);
    case Case::kMax: return M::canon(M::less(p, o) ? o : p);
    case Case::kAvg: return M::avg(M::sum(p, o), kAvgRanks);
    case Case::kPremulTwo:
    case Case::kPremulMinusOne: return M::premul(p, o, premulScalarOf<M>(c));
  }
  return p;
}

template <typename M>
ReduceKernel kernelOf(psdp_dtype_t dtype, Case c, KernelIsa isa) {
  static const psdp_op_t ops[] = {PSDP_SUM, PSDP_PROD, PSDP_MIN, PSDP_MAX, PSDP_AVG};
  if (c == Case::kPremulTwo || c == Case::kPremulMinusOne) {
    typename M::Stored scalar = premulScalarOf<M>(c);
    return makePremulSumKernel(dtype, &scalar, isa);
  }
  return findReduceKernel(dtype, ops[static_cast<int>(c)], isa);
}

// Integer-valued inputs in [-20, 20] (wrapped for unsigned types), different for the two operands.
template <typename M>
std::vector<typename M::Stored> inputs(size_t count, int seed) {
  std::vector<typename M::Stored> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = M::make(static_cast<int>((i * 7 + static_cast<size_t>(seed)) % 41) - 20);
  return v;
}

// got[i] == expect[i] bit for bit, except that where both operands are NaN any NaN will do: which payload
// a float sum or product keeps then is unspecified (reduce_kernels.h). Reports the first mismatch only.
template <typename M>
::testing::AssertionResult sameResults(const typename M::Stored* got, const std::vector<typename M::Stored>& expect,
                                       const typename M::Stored* p, const typename M::Stored* o) {
  using T = typename M::Stored;
  for (size_t i = 0; i < expect.size(); ++i) {
    if (std::memcmp(&got[i], &expect[i], sizeof(T)) == 0) continue;
    if (M::isNan(p[i]) && M::isNan(o[i]) && M::isNan(got[i])) continue;
    return ::testing::AssertionFailure() << "element " << i << ": got " << +got[i] << ", want " << +expect[i]
                                         << " (operands " << +p[i] << ", " << +o[i] << ")";
  }
  return ::testing::AssertionSuccess();
}

template <typename M>
void runCombine(const ReduceKernel& kernel, typename M::Stored* dst, const typename M::Stored* p,
                const typename M::Stored* o, size_t count) {
  kernel.combine(dst, p, o, count);
  if (kernel.finalize != nullptr) kernel.finalize(dst, count, kAvgRanks);
}

// One case over p[offset, offset + count) and o likewise: out of place, into partial, into own.
template <typename M>
void checkCombine(const ReduceKernel& kernel, Case c, const std::vector<typename M::Stored>& p,
                  const std::vector<typename M::Stored>& o, size_t offset, const std::string& where) {
  using T = typename M::Stored;
  const size_t count = p.size() - offset;
  std::vector<T> expect(count);
  for (size_t i = 0; i < count; ++i) expect[i] = expectOne<M>(c, p[offset + i], o[offset + i]);
  const T* po = p.data() + offset;
  const T* oo = o.data() + offset;

  std::vector<T> out(p.size(), M::make(99));
  runCombine<M>(kernel, out.data() + offset, po, oo, count);
  EXPECT_TRUE(sameResults<M>(out.data() + offset, expect, po, oo)) << where << ", out of place";

  std::vector<T> acc = p;
  runCombine<M>(kernel, acc.data() + offset, acc.data() + offset, oo, count);
  EXPECT_TRUE(sameResults<M>(acc.data() + offset, expect, po, oo)) << where << ", dst == partial";

  acc = o;
  runCombine<M>(kernel, acc.data() + offset, po, acc.data() + offset, count);
  EXPECT_TRUE(sameResults<M>(acc.data() + offset, expect, po, oo)) << where << ", dst == own";
}

template <typename M>
void checkScale(const ReduceKernel& kernel, typename M::Stored scalar, const std::vector<typename M::Stored>& in,
                size_t offset, const std::string& where) {
  using T = typename M::Stored;
  ASSERT_TRUE(kernel.scalesInput()) << where;
  const size_t count = in.size() - offset;
  std::vector<T> expect(count);
  for (size_t i = 0; i < count; ++i) expect[i] = M::prod(scalar, in[offset + i]);
  std::vector<T> scalars(count, scalar);
  std::vector<T> out(in.size(), M::make(99));
  kernel.scaleInput(out.data() + offset, in.data() + offset, count);
  EXPECT_TRUE(sameResults<M>(out.data() + offset, expect, scalars.data(), in.data() + offset)) << where;
  std::vector<T> data = in;
  kernel.scaleInput(data.data() + offset, data.data() + offset, count);
  EXPECT_TRUE(sameResults<M>(data.data() + offset, expect, scalars.data(), in.data() + offset))
      << where << ", in place";
}

std::string describe(psdp_dtype_t dtype, KernelIsa isa, const char* what) {
  return std::string(kernelIsaName(isa)) + " " + dtypeName(dtype) + " " + what;
}

// Small integer values at every count and offset.
template <typename M>
void checkDtype(psdp_dtype_t dtype, KernelIsa isa) {
  for (Case c : kCases) {
    ReduceKernel kernel = kernelOf<M>(dtype, c, isa);
    ASSERT_TRUE(kernel.isValid()) << describe(dtype, isa, caseName(c));
    for (size_t count : testCounts()) {
      for (size_t offset = 0; offset <= kMaxOffset; ++offset) {
        std::string where = describe(dtype, isa, caseName(c)) + ", count " + std::to_string(count) + ", offset " +
                            std::to_string(offset);
        checkCombine<M>(kernel, c, inputs<M>(count + offset, 3), inputs<M>(count + offset, 17), offset, where);
      }
    }
  }
  for (int scalar_value : {2, -1}) {
    auto scalar = M::make(scalar_value);
    ReduceKernel kernel = makePremulSumKernel(dtype, &scalar, isa);
    for (size_t count : testCounts()) {
      for (size_t offset = 0; offset <= kMaxOffset; ++offset) {
        checkScale<M>(kernel, scalar, inputs<M>(count + offset, 5), offset,
                      describe(dtype, isa, "scale") + " x" + std::to_string(scalar_value) + ", count " +
                          std::to_string(count) + ", offset " + std::to_string(offset));
      }
    }
  }
}

template <typename T>
std::vector<T> randomBits(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(count);
  for (T& x : v) {
    uint64_t bits = rng();
    std::memcpy(&x, &bits, sizeof(T));
  }
  return v;
}

// Random bit patterns (NaNs, infinities, subnormals, huge and tiny values, integer overflow), every case,
// at an aligned and a misaligned start; the scales use random scalars too.
template <typename M>
void checkRandomBits(psdp_dtype_t dtype, KernelIsa isa, size_t count, uint64_t seed) {
  using T = typename M::Stored;
  for (size_t offset : {size_t{0}, size_t{1}}) {
    std::vector<T> p = randomBits<T>(count + offset, seed);
    std::vector<T> o = randomBits<T>(count + offset, seed + 1);
    for (Case c : kCases) {
      checkCombine<M>(kernelOf<M>(dtype, c, isa), c, p, o, offset,
                      describe(dtype, isa, caseName(c)) + ", random bits, offset " + std::to_string(offset));
    }
    for (T scalar : randomBits<T>(4, seed + 2)) {
      checkScale<M>(makePremulSumKernel(dtype, &scalar, isa), scalar, p, offset,
                    describe(dtype, isa, "scale") + ", random bits, offset " + std::to_string(offset));
    }
  }
}

// Every 16-bit pattern as the partial operand against random own operands and the other way round, so that
// each pattern meets every op's vector conversions in both directions; and against a neighbour of the same
// magnitude, so that every subnormal meets subnormals (float results that are themselves subnormal).
template <typename M>
void checkEveryHalfPattern(psdp_dtype_t dtype, KernelIsa isa) {
  std::vector<uint16_t> every(65536);
  std::vector<uint16_t> near(every.size());
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    every[h] = static_cast<uint16_t>(h);
    near[h] = static_cast<uint16_t>(h ^ 0x0055);
  }
  std::vector<uint16_t> random = randomBits<uint16_t>(every.size(), 42);
  for (Case c : kCases) {
    ReduceKernel kernel = kernelOf<M>(dtype, c, isa);
    checkCombine<M>(kernel, c, every, random, 0, describe(dtype, isa, caseName(c)) + ", every partial");
    checkCombine<M>(kernel, c, random, every, 0, describe(dtype, isa, caseName(c)) + ", every own");
    checkCombine<M>(kernel, c, every, near, 1, describe(dtype, isa, caseName(c)) + ", every near neighbour");
  }
  for (uint16_t scalar : {M::make(1), M::make(-3), random[7]}) {
    checkScale<M>(makePremulSumKernel(dtype, &scalar, isa), scalar, every, 0,
                  describe(dtype, isa, "scale") + ", every pattern");
  }
}

// Widening then narrowing is the identity on every pattern but a signalling NaN, which comes back quiet with
// its sign and payload (the same rule for both types and every level): x + -0 is exactly x.
template <typename M>
void checkHalfRoundTrip(psdp_dtype_t dtype, KernelIsa isa, uint16_t quiet_bit) {
  std::vector<uint16_t> every(65536);
  for (uint32_t h = 0; h <= 0xffff; ++h) every[h] = static_cast<uint16_t>(h);
  std::vector<uint16_t> minus_zero(every.size(), 0x8000);
  std::vector<uint16_t> out(every.size());
  findReduceKernel(dtype, PSDP_SUM, isa).combine(out.data(), every.data(), minus_zero.data(), every.size());
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    uint16_t want = M::isNan(every[h]) ? static_cast<uint16_t>(h | quiet_bit) : every[h];
    ASSERT_EQ(out[h], want) << describe(dtype, isa, "round trip") << std::hex << ", pattern " << h;
  }
}

class ReduceKernelsIsaTest : public ::testing::TestWithParam<KernelIsa> {
 protected:
  void SetUp() override {
    if (!kernelIsaSupported(GetParam())) GTEST_SKIP() << kernelIsaName(GetParam()) << " is not supported here";
  }
};

TEST_P(ReduceKernelsIsaTest, Int8) {
  checkDtype<IntModel<int8_t>>(PSDP_INT8, GetParam());
  checkRandomBits<IntModel<int8_t>>(PSDP_INT8, GetParam(), 4099, 1);
}
TEST_P(ReduceKernelsIsaTest, Uint8) {
  checkDtype<IntModel<uint8_t>>(PSDP_UINT8, GetParam());
  checkRandomBits<IntModel<uint8_t>>(PSDP_UINT8, GetParam(), 4099, 2);
}
TEST_P(ReduceKernelsIsaTest, Int32) {
  checkDtype<IntModel<int32_t>>(PSDP_INT32, GetParam());
  checkRandomBits<IntModel<int32_t>>(PSDP_INT32, GetParam(), 4099, 3);
}
TEST_P(ReduceKernelsIsaTest, Uint32) {
  checkDtype<IntModel<uint32_t>>(PSDP_UINT32, GetParam());
  checkRandomBits<IntModel<uint32_t>>(PSDP_UINT32, GetParam(), 4099, 4);
}
TEST_P(ReduceKernelsIsaTest, Int64) {
  checkDtype<IntModel<int64_t>>(PSDP_INT64, GetParam());
  checkRandomBits<IntModel<int64_t>>(PSDP_INT64, GetParam(), 4099, 5);
}
TEST_P(ReduceKernelsIsaTest, Uint64) {
  checkDtype<IntModel<uint64_t>>(PSDP_UINT64, GetParam());
  checkRandomBits<IntModel<uint64_t>>(PSDP_UINT64, GetParam(), 4099, 6);
}
TEST_P(ReduceKernelsIsaTest, Float16) {
  checkDtype<Fp16Model>(PSDP_FLOAT16, GetParam());
  checkRandomBits<Fp16Model>(PSDP_FLOAT16, GetParam(), 4099, 7);
  checkEveryHalfPattern<Fp16Model>(PSDP_FLOAT16, GetParam());
  checkHalfRoundTrip<Fp16Model>(PSDP_FLOAT16, GetParam(), 0x0200);
}
TEST_P(ReduceKernelsIsaTest, Bfloat16) {
  checkDtype<Bf16Model>(PSDP_BFLOAT16, GetParam());
  checkRandomBits<Bf16Model>(PSDP_BFLOAT16, GetParam(), 4099, 8);
  checkEveryHalfPattern<Bf16Model>(PSDP_BFLOAT16, GetParam());
  checkHalfRoundTrip<Bf16Model>(PSDP_BFLOAT16, GetParam(), 0x0040);
}
TEST_P(ReduceKernelsIsaTest, Float32) {
  checkDtype<FloatModel<float>>(PSDP_FLOAT32, GetParam());
  checkRandomBits<FloatModel<float>>(PSDP_FLOAT32, GetParam(), 4099, 9);
}
TEST_P(ReduceKernelsIsaTest, Float64) {
  checkDtype<FloatModel<double>>(PSDP_FLOAT64, GetParam());
  checkRandomBits<FloatModel<double>>(PSDP_FLOAT64, GetParam(), 4099, 10);
}

#if defined(__x86_64__)
// An application may set flush-to-zero and denormals-are-zero; the float arithmetic then flushes at every
// level alike, and the conversions (F16C and AVX512_BF16 ignore MXCSR's denormal bits, coll/half.h never
// depends on them) must keep the levels in agreement. Not bfloat16 min/max: with DAZ a subnormal operand
// is unspecified there (reduce_kernels.h).
TEST_P(ReduceKernelsIsaTest, LevelsAgreeUnderFlushToZero) {
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u);  // FTZ | DAZ
  std::vector<uint16_t> every(65536);
  std::vector<uint16_t> near(every.size());
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    every[h] = static_cast<uint16_t>(h);
    near[h] = static_cast<uint16_t>(h ^ 0x0055);
  }
  for (psdp_dtype_t dtype : {PSDP_FLOAT16, PSDP_BFLOAT16}) {
    for (psdp_op_t op : {PSDP_SUM, PSDP_PROD, PSDP_MIN, PSDP_MAX, PSDP_AVG}) {
      if (dtype == PSDP_BFLOAT16 && (op == PSDP_MIN || op == PSDP_MAX)) continue;
      std::vector<uint16_t> want(every.size());
      std::vector<uint16_t> got(every.size());
      ReduceKernel reference = findReduceKernel(dtype, op, KernelIsa::kBaseline);
      ReduceKernel kernel = findReduceKernel(dtype, op, GetParam());
      reference.combine(want.data(), every.data(), near.data(), every.size());
      kernel.combine(got.data(), every.data(), near.data(), every.size());
      if (reference.finalize != nullptr) {
        reference.finalize(want.data(), want.size(), kAvgRanks);
        kernel.finalize(got.data(), got.size(), kAvgRanks);
      }
      EXPECT_TRUE(sameResults<Fp16Model>(got.data(), want, every.data(), near.data()))
          << describe(dtype, GetParam(), opName(op)) << " with FTZ and DAZ";
    }
  }
  _mm_setcsr(saved);
}
#endif

INSTANTIATE_TEST_SUITE_P(Levels, ReduceKernelsIsaTest,
                         ::testing::Values(KernelIsa::kBaseline, KernelIsa::kAvx2, KernelIsa::kAvx512,
                                           KernelIsa::kAvx512Bf16),
                         [](const ::testing::TestParamInfo<KernelIsa>& info) {
                           return std::string(kernelIsaName(info.param));
                         });

// The baseline runs everywhere; the default lookup uses the best supported level, and an unsupported level
// gives no kernel rather than one that would fault.
TEST(ReduceKernelsTest, DispatchPicksTheBestSupportedLevel) {
  EXPECT_TRUE(kernelIsaSupported(KernelIsa::kBaseline));
  KernelIsa selected = selectedKernelIsa();
  EXPECT_TRUE(kernelIsaSupported(selected));
  std::printf("kernels use the %s level\n", kernelIsaName(selected));
  for (int i = 0; i < kNumKernelIsas; ++i) {
    auto isa = static_cast<KernelIsa>(i);
    EXPECT_EQ(kernelIsaSupported(isa), i <= static_cast<int>(selected)) << kernelIsaName(isa);
    float one = 1.0f;
    EXPECT_EQ(findReduceKernel(PSDP_FLOAT32, PSDP_SUM, isa).isValid(), kernelIsaSupported(isa));
    EXPECT_EQ(makePremulSumKernel(PSDP_FLOAT32, &one, isa).isValid(), kernelIsaSupported(isa));
  }
  EXPECT_EQ(findReduceKernel(PSDP_FLOAT16, PSDP_SUM).combine_fn,
            findReduceKernel(PSDP_FLOAT16, PSDP_SUM, selected).combine_fn);
}

template <typename T>
T combineOne(psdp_op_t op, T a, T b) {
  T out{};
  findReduceKernel(sizeof(T) == 1   ? (std::is_signed_v<T> ? PSDP_INT8 : PSDP_UINT8)
                   : sizeof(T) == 4 ? (std::is_signed_v<T> ? PSDP_INT32 : PSDP_UINT32)
                                    : (std::is_signed_v<T> ? PSDP_INT64 : PSDP_UINT64),
                   op)
      .combine(&out, &a, &b, 1);
  return out;
}

// Two's complement wrap, with no undefined behaviour (UBSan builds check that too).
TEST(ReduceKernelsTest, IntegerSumAndProdWrap) {
  EXPECT_EQ(combineOne<int8_t>(PSDP_SUM, 127, 1), -128);
  EXPECT_EQ(combineOne<uint8_t>(PSDP_SUM, 255, 1), 0);
  EXPECT_EQ(combineOne<int8_t>(PSDP_PROD, 64, 4), 0);
  EXPECT_EQ(combineOne<int8_t>(PSDP_PROD, -128, -1), -128);
  EXPECT_EQ(combineOne<int32_t>(PSDP_SUM, std::numeric_limits<int32_t>::max(), 2),
            std::numeric_limits<int32_t>::min() + 1);
  EXPECT_EQ(combineOne<int32_t>(PSDP_PROD, 65536, 65536), 0);
  EXPECT_EQ(combineOne<uint32_t>(PSDP_PROD, 0x80000000u, 2u), 0u);
  EXPECT_EQ(combineOne<int64_t>(PSDP_SUM, std::numeric_limits<int64_t>::min(), -1),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(combineOne<int64_t>(PSDP_PROD, std::numeric_limits<int64_t>::min(), -1),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(combineOne<uint64_t>(PSDP_SUM, ~uint64_t{0}, 2u), 1u);
}

// Integer avg truncates toward zero, and nranks beyond the element type's range is no problem.
TEST(ReduceKernelsTest, IntegerAvgTruncatesTowardZero) {
  int8_t values[] = {-7, 7, -128, 127};
  findReduceKernel(PSDP_INT8, PSDP_AVG).finalize(values, 4, 2);
  EXPECT_EQ(values[0], -3);
  EXPECT_EQ(values[1], 3);
  EXPECT_EQ(values[2], -64);
  EXPECT_EQ(values[3], 63);
  int8_t wide[] = {100};
  findReduceKernel(PSDP_INT8, PSDP_AVG).finalize(wide, 1, 200);
  EXPECT_EQ(wide[0], 0);
  uint64_t big[] = {~uint64_t{0}};
  findReduceKernel(PSDP_UINT64, PSDP_AVG).finalize(big, 1, 3);
  EXPECT_EQ(big[0], ~uint64_t{0} / 3);
}

// float16 sum rounds once per combine: 2048 + 1 is a tie between 2048 and 2050 and goes to even (2048);
// 65504 + 16 is the overflow threshold and goes to infinity.
TEST(ReduceKernelsTest, HalfSumRoundsOncePerCombine) {
  uint16_t a[] = {floatToFp16(2048.0f), floatToFp16(2048.0f), floatToFp16(65504.0f), floatToFp16(65504.0f)};
  uint16_t b[] = {floatToFp16(1.0f), floatToFp16(3.0f), floatToFp16(16.0f), floatToFp16(15.0f)};
  findReduceKernel(PSDP_FLOAT16, PSDP_SUM).combine(a, a, b, 4);
  EXPECT_EQ(fp16ToFloat(a[0]), 2048.0f);
  EXPECT_EQ(fp16ToFloat(a[1]), 2052.0f);
  EXPECT_EQ(a[2], 0x7c00);
  EXPECT_EQ(fp16ToFloat(a[3]), 65504.0f);
  uint16_t c[] = {floatToBf16(256.0f), floatToBf16(256.0f)};
  uint16_t d[] = {floatToBf16(1.0f), floatToBf16(3.0f)};
  findReduceKernel(PSDP_BFLOAT16, PSDP_SUM).combine(c, c, d, 2);
  EXPECT_EQ(bf16ToFloat(c[0]), 256.0f);
  EXPECT_EQ(bf16ToFloat(c[1]), 260.0f);
}

TEST(ReduceKernelsTest, EveryBuiltInPairIsSupportedAndOnlyAvgFinalizes) {
  for (int d = 0; d < PSDP_NUM_DTYPES; ++d) {
    for (int o = 0; o < PSDP_NUM_OPS; ++o) {
      auto dtype = static_cast<psdp_dtype_t>(d);
      auto op = static_cast<psdp_op_t>(o);
      ReduceKernel kernel = findReduceKernel(dtype, op);
      EXPECT_TRUE(isReductionSupported(dtype, op)) << dtypeName(dtype) << " " << opName(op);
      EXPECT_TRUE(kernel.isValid());
      EXPECT_EQ(kernel.finalize != nullptr, op == PSDP_AVG) << dtypeName(dtype) << " " << opName(op);
      EXPECT_FALSE(kernel.scalesInput());
    }
  }
  EXPECT_FALSE(isReductionSupported(static_cast<psdp_dtype_t>(-1), PSDP_SUM));
  EXPECT_FALSE(isReductionSupported(PSDP_FLOAT32, static_cast<psdp_op_t>(PSDP_NUM_OPS)));
  EXPECT_FALSE(isReductionSupported(PSDP_FLOAT32, static_cast<psdp_op_t>(-1)));
  EXPECT_FALSE(isReductionSupported(static_cast<psdp_dtype_t>(PSDP_NUM_DTYPES), PSDP_SUM));
  float one = 1.0f;
  EXPECT_FALSE(makePremulSumKernel(static_cast<psdp_dtype_t>(PSDP_NUM_DTYPES), &one).isValid());
  EXPECT_FALSE(makePremulSumKernel(PSDP_FLOAT32, nullptr).isValid());
}

TEST(DtypeTest, EveryDtypeHasASizeAndAUniqueName) {
  const size_t sizes[PSDP_NUM_DTYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  std::vector<std::string> names;
  for (int d = 0; d < PSDP_NUM_DTYPES; ++d) {
    auto dtype = static_cast<psdp_dtype_t>(d);
    EXPECT_EQ(dtypeSize(dtype), sizes[d]) << dtypeName(dtype);
    EXPECT_STRNE(dtypeName(dtype), "unknown");
    names.emplace_back(dtypeName(dtype));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  EXPECT_EQ(dtypeSize(static_cast<psdp_dtype_t>(PSDP_NUM_DTYPES)), 0u);
  EXPECT_STREQ(dtypeName(static_cast<psdp_dtype_t>(-3)), "unknown");
  EXPECT_STREQ(dtypeName(PSDP_BFLOAT16), "bfloat16");
}

TEST(DtypeTest, EveryOpHasAUniqueName) {
  std::vector<std::string> names;
  for (int o = 0; o < PSDP_NUM_OPS; ++o) {
    auto op = static_cast<psdp_op_t>(o);
    EXPECT_STRNE(opName(op), "unknown");
    names.emplace_back(opName(op));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  EXPECT_STREQ(opName(PSDP_AVG), "avg");
  EXPECT_STREQ(opName(static_cast<psdp_op_t>(PSDP_NUM_OPS)), "unknown");
}

}  // namespace
}  // namespace psdp::coll
