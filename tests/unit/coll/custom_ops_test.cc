// The premul-sum op table: op values, lookup by dtype, lifecycle, and ops of another table.
#include "coll/custom_ops.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace psdp::coll {
namespace {

TEST(CustomOpsTest, CreatedOpsAreBeyondTheBuiltInsAndDistinct) {
  CustomOps ops;
  float two = 2.0f;
  auto a = ops.createPremulSum(&two, PSDP_FLOAT32);
  auto b = ops.createPremulSum(&two, PSDP_FLOAT32);
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_GE(static_cast<int>(a.value()), PSDP_NUM_OPS);
  EXPECT_NE(a.value(), b.value());
  EXPECT_EQ(ops.size(), 2u);
}

TEST(CustomOpsTest, FindGivesTheScaledKernelForItsDtypeOnly) {
  CustomOps ops;
  int32_t minus_one = -1;
  auto op = ops.createPremulSum(&minus_one, PSDP_INT32);
  ASSERT_TRUE(op.isOk());
  auto kernel = ops.find("all-reduce", PSDP_INT32, op.value());
  ASSERT_TRUE(kernel.isOk()) << kernel.status().toString();
  int32_t partial = 10, own = 3, out = 0;
  kernel.value().combine(&out, &partial, &own, 1);
  EXPECT_EQ(out, 7);
  EXPECT_TRUE(kernel.value().scalesInput());

  auto wrong = ops.find("all-reduce", PSDP_FLOAT32, op.value());
  ASSERT_FALSE(wrong.isOk());
  EXPECT_EQ(wrong.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(wrong.status().message().find("int32"), std::string::npos) << wrong.status().message();
}

TEST(CustomOpsTest, DestroyedOpsAndOpsOfAnotherTableAreInvalid) {
  CustomOps ops, other;
  double half = 0.5;
  auto op = ops.createPremulSum(&half, PSDP_FLOAT64);
  ASSERT_TRUE(op.isOk());
  auto foreign = other.find("reduce-scatter", PSDP_FLOAT64, op.value());
  ASSERT_FALSE(foreign.isOk());
  EXPECT_EQ(foreign.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(other.destroy(op.value()).code(), PSDP_ERR_INVALID_ARGUMENT);

  EXPECT_TRUE(ops.destroy(op.value()).isOk());
  EXPECT_EQ(ops.size(), 0u);
  auto gone = ops.find("reduce-scatter", PSDP_FLOAT64, op.value());
  ASSERT_FALSE(gone.isOk());
  EXPECT_EQ(gone.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(gone.status().message().find("not a live premul-sum op"), std::string::npos);
  EXPECT_EQ(ops.destroy(op.value()).code(), PSDP_ERR_INVALID_ARGUMENT);
  Status built_in = ops.destroy(PSDP_SUM);
  EXPECT_EQ(built_in.code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(built_in.message().find("op 0 (sum) is built in"), std::string::npos) << built_in.message();
}

// A value past every op this process has handed out is unknown, like a negative one: it was never a premul-sum
// op (PSDP_NUM_OPS itself, before any premul-sum op exists, is such a value).
TEST(CustomOpsTest, ValuesNeverHandedOutAreUnknownOps) {
  CustomOps ops;
  float two = 2.0f;
  auto op = ops.createPremulSum(&two, PSDP_FLOAT32);
  ASSERT_TRUE(op.isOk());
  const int never = static_cast<int>(op.value()) + 1000;
  auto unknown = ops.find("all-reduce", PSDP_FLOAT32, static_cast<psdp_op_t>(never));
  ASSERT_FALSE(unknown.isOk());
  EXPECT_EQ(unknown.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(unknown.status().message(), "all-reduce: unknown op " + std::to_string(never));
  Status destroy_unknown = ops.destroy(static_cast<psdp_op_t>(never));
  EXPECT_NE(destroy_unknown.message().find("unknown op"), std::string::npos) << destroy_unknown.message();
  EXPECT_TRUE(ops.destroy(op.value()).isOk());
}

TEST(CustomOpsTest, BuiltInOpsAreFoundAndBadValuesRejected) {
  CustomOps ops;
  auto sum = ops.find("all-reduce", PSDP_BFLOAT16, PSDP_MAX);
  ASSERT_TRUE(sum.isOk());
  EXPECT_TRUE(sum.value().isValid());
  EXPECT_FALSE(sum.value().scalesInput());
  EXPECT_EQ(ops.find("x", PSDP_FLOAT32, static_cast<psdp_op_t>(-1)).status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ops.find("x", static_cast<psdp_dtype_t>(42), PSDP_SUM).status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ops.find("x", PSDP_FLOAT32, PSDP_OP_MAX_ENUM).status().code(), PSDP_ERR_INVALID_ARGUMENT);
  float one = 1.0f;
  EXPECT_EQ(ops.createPremulSum(nullptr, PSDP_FLOAT32).status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ops.createPremulSum(&one, static_cast<psdp_dtype_t>(PSDP_NUM_DTYPES)).status().code(),
            PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ops.size(), 0u);
}

}  // namespace
}  // namespace psdp::coll
