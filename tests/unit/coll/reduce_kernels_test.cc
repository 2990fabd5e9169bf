// Every (dtype, op) kernel against a scalar model of the same semantics, on integer-valued data, in and
// out of place, at counts around the vector widths and at misaligned starts. The models compute exactly
// (integers in 64-bit wrapping arithmetic, floats in their own precision, float16/bfloat16 in float32 then
// rounded by the conversions that half_test.cc checks exhaustively).
#include "coll/reduce_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "coll/collectives.h"
#include "coll/half.h"

namespace psdp::coll {
namespace {

// Counts around the vector widths, so that both the vector body and the scalar tail run; offsets 0..3
// start the arrays off their natural alignment.
constexpr size_t kCounts[] = {0, 1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000};
constexpr int kAvgRanks = 3;

template <typename T>
struct IntModel {
  using Stored = T;
  static T make(int v) { return static_cast<T>(v); }
  static T sum(T a, T b) { return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
  static T prod(T a, T b) { return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
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
  static F sum(F a, F b) { return a + b; }
  static F prod(F a, F b) { return a * b; }
  static F avg(F x, int n) { return x / static_cast<F>(n); }
  static bool less(F a, F b) { return a < b; }
};

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
struct HalfModel {
  using Stored = uint16_t;
  static uint16_t make(int v) { return Store(static_cast<float>(v)); }
  static uint16_t sum(uint16_t a, uint16_t b) { return Store(Load(a) + Load(b)); }
  static uint16_t prod(uint16_t a, uint16_t b) { return Store(Load(a) * Load(b)); }
  static uint16_t avg(uint16_t x, int n) { return Store(Load(x) / static_cast<float>(n)); }
  static bool less(uint16_t a, uint16_t b) { return Load(a) < Load(b); }
};
using Fp16Model = HalfModel<fp16ToFloat, floatToFp16>;
using Bf16Model = HalfModel<bf16ToFloat, floatToBf16>;

enum class Case { kSum, kProd, kMin, kMax, kAvg, kPremulTwo, kPremulMinusOne };

const char* caseName(Case c) {
  const char* names[] = {"sum", "prod", "min", "max", "avg", "premul-sum x2", "premul-sum x-1"};
  return names[static_cast<int>(c)];
}

// The model of one combine (plus avg's finalize): partial p, own input o.
template <typename M>
typename M::Stored expectOne(Case c, typename M::Stored p, typename M::Stored o) {
  switch (c) {
    case Case::kSum: return M::sum(p, o);
    case Case::kProd: return M::prod(p, o);
    case Case::kMin: return M::less(o, p) ? o : p;
    case Case::kMax: return M::less(p, o) ? o : p;
    case Case::kAvg: return M::avg(M::sum(p, o), kAvgRanks);
    case Case::kPremulTwo: return M::sum(p, M::prod(M::make(2), o));
    case Case::kPremulMinusOne: return M::sum(p, M::prod(M::make(-1), o));
  }
  return p;
}

template <typename M>
ReduceKernel kernelOf(psdp_dtype_t dtype, Case c) {
  static const psdp_op_t ops[] = {PSDP_SUM, PSDP_PROD, PSDP_MIN, PSDP_MAX, PSDP_AVG};
  if (c == Case::kPremulTwo || c == Case::kPremulMinusOne) {
    typename M::Stored scalar = M::make(c == Case::kPremulTwo ? 2 : -1);
    return makePremulSumKernel(dtype, &scalar);
  }
  return findReduceKernel(dtype, ops[static_cast<int>(c)]);
}

// Integer-valued inputs in [-20, 20] (wrapped for unsigned types), different for the two operands.
template <typename M>
std::vector<typename M::Stored> inputs(size_t count, int seed) {
  std::vector<typename M::Stored> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = M::make(static_cast<int>((i * 7 + static_cast<size_t>(seed)) % 41) - 20);
  return v;
}

template <typename T>
bool sameBits(const T* got, const std::vector<T>& expect) {
  return expect.empty() || std::memcmp(got, expect.data(), expect.size() * sizeof(T)) == 0;
}

template <typename M>
void runCombine(const ReduceKernel& kernel, typename M::Stored* dst, const typename M::Stored* p,
                const typename M::Stored* o, size_t count) {
  kernel.combine(dst, p, o, count);
  if (kernel.finalize != nullptr) kernel.finalize(dst, count, kAvgRanks);
}

template <typename M>
void checkCase(psdp_dtype_t dtype, Case c) {
  using T = typename M::Stored;
  ReduceKernel kernel = kernelOf<M>(dtype, c);
  ASSERT_TRUE(kernel.isValid()) << dtypeName(dtype) << " " << caseName(c);
  for (size_t count : kCounts) {
    for (size_t offset = 0; offset < 4; ++offset) {
      std::vector<T> p = inputs<M>(count + offset, 3);
      std::vector<T> o = inputs<M>(count + offset, 17);
      std::vector<T> expect(count);
      for (size_t i = 0; i < count; ++i) expect[i] = expectOne<M>(c, p[offset + i], o[offset + i]);
      std::string where = std::string(dtypeName(dtype)) + " " + caseName(c) + ", count " + std::to_string(count) +
                          ", offset " + std::to_string(offset);

      std::vector<T> out(count + offset, M::make(99));
      runCombine<M>(kernel, out.data() + offset, p.data() + offset, o.data() + offset, count);
      EXPECT_TRUE(sameBits(out.data() + offset, expect)) << where << ", out of place";

      std::vector<T> acc = p;
      runCombine<M>(kernel, acc.data() + offset, acc.data() + offset, o.data() + offset, count);
      EXPECT_TRUE(sameBits(acc.data() + offset, expect)) << where << ", dst == partial";

      acc = o;
      runCombine<M>(kernel, acc.data() + offset, p.data() + offset, acc.data() + offset, count);
      EXPECT_TRUE(sameBits(acc.data() + offset, expect)) << where << ", dst == own";
    }
  }
}

template <typename M>
void checkScale(psdp_dtype_t dtype, int scalar_value) {
  using T = typename M::Stored;
  T scalar = M::make(scalar_value);
  ReduceKernel kernel = makePremulSumKernel(dtype, &scalar);
  ASSERT_TRUE(kernel.scalesInput());
  for (size_t count : kCounts) {
    std::vector<T> in = inputs<M>(count, 5);
    std::vector<T> expect(count);
    for (size_t i = 0; i < count; ++i) expect[i] = M::prod(scalar, in[i]);
    std::vector<T> out(count, M::make(99));
    kernel.scaleInput(out.data(), in.data(), count);
    EXPECT_TRUE(sameBits(out.data(), expect)) << dtypeName(dtype) << " x" << scalar_value << ", count " << count;
    kernel.scaleInput(in.data(), in.data(), count);
    EXPECT_TRUE(sameBits(in.data(), expect)) << dtypeName(dtype) << " in place, count " << count;
  }
}

template <typename M>
void checkDtype(psdp_dtype_t dtype) {
  for (Case c :
       {Case::kSum, Case::kProd, Case::kMin, Case::kMax, Case::kAvg, Case::kPremulTwo, Case::kPremulMinusOne}) {
    checkCase<M>(dtype, c);
  }
  checkScale<M>(dtype, 2);
  checkScale<M>(dtype, -1);
}

TEST(ReduceKernelsTest, Int8) {
  checkDtype<IntModel<int8_t>>(PSDP_INT8);
}
TEST(ReduceKernelsTest, Uint8) {
  checkDtype<IntModel<uint8_t>>(PSDP_UINT8);
}
TEST(ReduceKernelsTest, Int32) {
  checkDtype<IntModel<int32_t>>(PSDP_INT32);
}
TEST(ReduceKernelsTest, Uint32) {
  checkDtype<IntModel<uint32_t>>(PSDP_UINT32);
}
TEST(ReduceKernelsTest, Int64) {
  checkDtype<IntModel<int64_t>>(PSDP_INT64);
}
TEST(ReduceKernelsTest, Uint64) {
  checkDtype<IntModel<uint64_t>>(PSDP_UINT64);
}
TEST(ReduceKernelsTest, Float16) {
  checkDtype<Fp16Model>(PSDP_FLOAT16);
}
TEST(ReduceKernelsTest, Bfloat16) {
  checkDtype<Bf16Model>(PSDP_BFLOAT16);
}
TEST(ReduceKernelsTest, Float32) {
  checkDtype<FloatModel<float>>(PSDP_FLOAT32);
}
TEST(ReduceKernelsTest, Float64) {
  checkDtype<FloatModel<double>>(PSDP_FLOAT64);
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
