#include "coll/reduce_kernels.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "coll/collectives.h"

namespace psdp::coll {
namespace {

// Counts around the vector widths, so that both the vector body and the scalar tail run; offsets 0..3
// start the arrays off their natural 16-byte alignment.
constexpr size_t kCounts[] = {0, 1, 3, 4, 5, 15, 16, 17, 63, 64, 65, 1000};

template <typename T>
std::vector<T> ramp(size_t count, T start) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<T>(start + static_cast<T>(i % 997));
  return v;
}

template <typename T>
void checkSum(psdp_dtype_t dtype) {
  ReduceKernel kernel = findReduceKernel(dtype, PSDP_SUM);
  ASSERT_TRUE(kernel.isValid());
  EXPECT_EQ(kernel.finalize, nullptr);
  for (size_t count : kCounts) {
    for (size_t offset = 0; offset < 4; ++offset) {
      std::vector<T> a = ramp<T>(count + offset, 3);
      std::vector<T> b = ramp<T>(count + offset, 1000);
      std::vector<T> expect(count);
      for (size_t i = 0; i < count; ++i) expect[i] = a[offset + i] + b[offset + i];

      std::vector<T> out(count + offset, T{-1});
      kernel.combine(out.data() + offset, a.data() + offset, b.data() + offset, count);
      EXPECT_TRUE(std::equal(expect.begin(), expect.end(), out.begin() + static_cast<ptrdiff_t>(offset)))
          << "out of place, count " << count;

      std::vector<T> acc = a;
      kernel.combine(acc.data() + offset, acc.data() + offset, b.data() + offset, count);
      EXPECT_TRUE(std::equal(expect.begin(), expect.end(), acc.begin() + static_cast<ptrdiff_t>(offset)))
          << "dst == a, count " << count;

      acc = b;
      kernel.combine(acc.data() + offset, a.data() + offset, acc.data() + offset, count);
      EXPECT_TRUE(std::equal(expect.begin(), expect.end(), acc.begin() + static_cast<ptrdiff_t>(offset)))
          << "dst == b, count " << count;
    }
  }
}

TEST(ReduceKernelsTest, Float32SumIsElementwiseInAndOutOfPlace) {
  checkSum<float>(PSDP_FLOAT32);
}

TEST(ReduceKernelsTest, Int32SumIsElementwiseInAndOutOfPlace) {
  checkSum<int32_t>(PSDP_INT32);
}

TEST(ReduceKernelsTest, Int32SumWrapsOnOverflow) {
  ReduceKernel kernel = findReduceKernel(PSDP_INT32, PSDP_SUM);
  std::vector<int32_t> a(33, std::numeric_limits<int32_t>::max());
  std::vector<int32_t> b(33, 2);
  kernel.combine(a.data(), a.data(), b.data(), a.size());
  for (int32_t v : a) EXPECT_EQ(v, std::numeric_limits<int32_t>::min() + 1);
}

TEST(ReduceKernelsTest, OnlyFloat32AndInt32SumAreSupported) {
  for (int d = 0; d < PSDP_NUM_DTYPES; ++d) {
    for (int o = 0; o < PSDP_NUM_OPS; ++o) {
      auto dtype = static_cast<psdp_dtype_t>(d);
      auto op = static_cast<psdp_op_t>(o);
      bool expected = op == PSDP_SUM && (dtype == PSDP_FLOAT32 || dtype == PSDP_INT32);
      EXPECT_EQ(isReductionSupported(dtype, op), expected) << dtypeName(dtype) << " " << opName(op);
      EXPECT_EQ(findReduceKernel(dtype, op).isValid(), expected);
    }
  }
  EXPECT_FALSE(isReductionSupported(static_cast<psdp_dtype_t>(-1), PSDP_SUM));
  EXPECT_FALSE(isReductionSupported(PSDP_FLOAT32, static_cast<psdp_op_t>(PSDP_NUM_OPS)));
  EXPECT_FALSE(isReductionSupported(static_cast<psdp_dtype_t>(PSDP_NUM_DTYPES), PSDP_SUM));
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
