#include "coll/op_header.h"

#include <gtest/gtest.h>

#include "coll/op_header_check.h"

namespace psdp::coll {
namespace {

OpHeader broadcastHeader() {
  OpHeader h{OpKind::kBroadcast, 7, 1000, PSDP_BFLOAT16};
  h.root = 3;
  return h;
}

TEST(OpHeaderTest, DescribesWhatTheRankCalled) {
  EXPECT_EQ((OpHeader{OpKind::kAllReduce, 12, 1000, PSDP_FLOAT32}.withOp(PSDP_SUM).describe()),
            "all-reduce #12 (count 1000, float32, sum)");
  EXPECT_EQ((OpHeader{OpKind::kReduceScatter, 1, 5, PSDP_INT8}.withOp(PSDP_MAX).describe()),
            "reduce-scatter #1 (count 5, int8, max)");
  EXPECT_EQ((OpHeader{OpKind::kAllGather, 2, 0, PSDP_UINT64}.describe()), "all-gather #2 (count 0, uint64)");
  EXPECT_EQ(broadcastHeader().describe(), "broadcast #7 (count 1000, bfloat16, root 3)");
  EXPECT_EQ((OpHeader{OpKind::kBarrier, 4}.describe()), "barrier #4");
}

// Each rank's premul-sum op is its own process-local value; they must still compare equal.
TEST(OpHeaderTest, EveryPremulSumOpIsTheSame) {
  OpHeader a = OpHeader{OpKind::kAllReduce, 0, 10, PSDP_FLOAT32}.withOp(static_cast<psdp_op_t>(PSDP_NUM_OPS + 3));
  OpHeader b = OpHeader{OpKind::kAllReduce, 0, 10, PSDP_FLOAT32}.withOp(static_cast<psdp_op_t>(PSDP_NUM_OPS + 9));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.describe(), "all-reduce #0 (count 10, float32, premul-sum)");
  EXPECT_NE(a, (OpHeader{OpKind::kAllReduce, 0, 10, PSDP_FLOAT32}.withOp(PSDP_SUM)));
}

TEST(OpHeaderTest, RoundTripsAndRejectsWhatIsNotAHeader) {
  for (OpHeader h : {broadcastHeader(), OpHeader{OpKind::kBarrier, 0xffffffffu},
                     OpHeader{OpKind::kReduceScatter, 9, ~uint64_t{0}, PSDP_FLOAT64}.withOp(PSDP_AVG)}) {
    OpHeaderBytes bytes = encodeOpHeader(h);
    Result<OpHeader> back = decodeOpHeader(bytes.data(), bytes.size());
    ASSERT_TRUE(back.isOk()) << back.status().toString();
    EXPECT_EQ(back.value(), h) << h.describe();
  }
  OpHeaderBytes bytes = encodeOpHeader(broadcastHeader());
  EXPECT_EQ(decodeOpHeader(bytes.data(), bytes.size() - 1).status().code(), PSDP_ERR_MISMATCH);
  bytes[0] ^= std::byte{1};
  Result<OpHeader> garbled = decodeOpHeader(bytes.data(), bytes.size());
  EXPECT_EQ(garbled.status().code(), PSDP_ERR_MISMATCH);
  EXPECT_NE(garbled.status().message().find("magic"), std::string::npos) << garbled.status().message();
}

TEST(OpAgreementTest, RoundTripsWithAndWithoutADisagreement) {
  OpAgreement agreed;
  agreed.header = broadcastHeader();
  OpAgreement disagreed = agreed;
  disagreed.disagree = true;
  disagreed.rank_a = 5;
  disagreed.header_a = OpHeader{OpKind::kBarrier, 7};
  disagreed.rank_b = 6;
  disagreed.header_b = broadcastHeader();
  for (const OpAgreement& a : {agreed, disagreed}) {
    OpAgreementBytes bytes = encodeOpAgreement(a);
    Result<OpAgreement> back = decodeOpAgreement(bytes.data(), bytes.size());
    ASSERT_TRUE(back.isOk()) << back.status().toString();
    EXPECT_EQ(back.value(), a);
  }
  OpAgreementBytes bytes = encodeOpAgreement(agreed);
  EXPECT_EQ(decodeOpAgreement(bytes.data(), bytes.size() - 8).status().code(), PSDP_ERR_MISMATCH);
}

}  // namespace
}  // namespace psdp::coll
