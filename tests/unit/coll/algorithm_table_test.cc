// The algorithm table: the built-in rules make today's choices, PSDP_ALGORITHM and PSDP_ALGORITHMS rules come
// first in that order, rule text round-trips through the formatter, and every malformed rule is named.
#include "coll/algorithm_table.h"

#include <gtest/gtest.h>

#include <string>

namespace psdp::coll {
namespace {

constexpr size_t KiB = size_t{1} << 10, MiB = size_t{1} << 20;

std::string describe(const AlgorithmRule& r) {
  return AlgorithmTable::formatRule(r) + " (" + r.origin + ")";
}

TEST(AlgorithmTableTest, BuiltInRulesAreTheMeasuredChoices) {
  AlgorithmTable table;
  for (OpKind kind : {OpKind::kAllReduce, OpKind::kReduceScatter, OpKind::kAllGather}) {
    EXPECT_EQ(table.find(kind, 4, 0).algorithm, Algorithm::kRecursive) << opKindName(kind);
    EXPECT_EQ(table.find(kind, 4, 256 * KiB - 1).algorithm, Algorithm::kRecursive) << opKindName(kind);
    const AlgorithmRule& middle = table.find(kind, 4, 256 * KiB);
    EXPECT_EQ(middle.algorithm, Algorithm::kDirect) << describe(middle);
    EXPECT_EQ(middle.fallback, Algorithm::kRing) << describe(middle);
    EXPECT_FALSE(middle.streaming) << describe(middle);
    // Reductions read private buffers with CMA only from 8 MiB; copies wherever they run direct.
    EXPECT_EQ(middle.cma, kind == OpKind::kAllGather) << describe(middle);
    const AlgorithmRule& large = table.find(kind, 4, 8 * MiB);
    EXPECT_TRUE(large.cma && large.streaming) << describe(large);
    EXPECT_EQ(table.find(kind, 4, 8 * MiB - 1).streaming, false) << opKindName(kind);
    EXPECT_EQ(middle.backoff, 64) << "a private caller's offers: under 2% of its operations";
    EXPECT_EQ(large.backoff, 64);
  }
  EXPECT_EQ(table.find(OpKind::kBroadcast, 4, 1000).algorithm, Algorithm::kRing);
  EXPECT_EQ(table.find(OpKind::kBroadcast, 4, MiB).algorithm, Algorithm::kDirect);
  EXPECT_EQ(table.maxDepth(), kDefaultDepth);
  EXPECT_EQ(table.maxFragmentBytes(MiB), MiB);
}

// Where the ring's messages pass through shared memory in pieces (UCX without a single-copy rendezvous),
// reductions read private buffers with CMA from 256 KiB; nothing else changes.
TEST(AlgorithmTableTest, ReductionsReadWithCmaFrom256KWhereTheRingCopiesTwice) {
  AlgorithmTable single_copy;
  AlgorithmTable pieces(InterconnectTraits{.ring_single_copy = false});
  auto made = AlgorithmTable::make(PSDP_ALGORITHM_AUTO, "", {}, InterconnectTraits{.ring_single_copy = false});
  ASSERT_TRUE(made.isOk()) << made.status().toString();
  ASSERT_EQ(pieces.rules().size(), single_copy.rules().size());
  ASSERT_EQ(made.value().rules().size(), pieces.rules().size());
  for (size_t i = 0; i < pieces.rules().size(); ++i) {
    const AlgorithmRule& a = single_copy.rules()[i];
    const AlgorithmRule& b = pieces.rules()[i];
    EXPECT_EQ(AlgorithmTable::formatRule(made.value().rules()[i]), AlgorithmTable::formatRule(b));
    const bool middle_reduction =
        (b.kind == OpKind::kAllReduce || b.kind == OpKind::kReduceScatter) && b.min_bytes == 256 * KiB;
    EXPECT_EQ(b.cma, middle_reduction || a.cma) << describe(b);
    AlgorithmRule same = b;
    same.cma = a.cma;
    EXPECT_EQ(AlgorithmTable::formatRule(same), AlgorithmTable::formatRule(a));
  }
  for (OpKind kind : {OpKind::kAllReduce, OpKind::kReduceScatter}) {
    EXPECT_TRUE(pieces.find(kind, 2, MiB).cma) << opKindName(kind);
    EXPECT_FALSE(single_copy.find(kind, 2, MiB).cma) << opKindName(kind);
    EXPECT_EQ(pieces.find(kind, 2, 256 * KiB - 1).algorithm, Algorithm::kRecursive) << opKindName(kind);
  }
}

TEST(AlgorithmTableTest, UserRulesComeFirstThenTheForcedAlgorithm) {
  auto table = AlgorithmTable::make(PSDP_ALGORITHM_RING,
                                    "all-reduce:0-64K=rhd,ranks=2-4;  all-gather:1M-=direct,fallback=rhd,cma=0,"
                                    "stream=1 ; reduce-scatter:-=ring,fragment=256K,depth=16");
  ASSERT_TRUE(table.isOk()) << table.status().toString();
  const AlgorithmTable& t = table.value();
  EXPECT_EQ(t.find(OpKind::kAllReduce, 4, 1000).algorithm, Algorithm::kRecursive);
  EXPECT_STREQ(t.find(OpKind::kAllReduce, 4, 1000).origin, "PSDP_ALGORITHMS");
  // Outside the user's ranks or sizes the forced ring decides, before the built-in rules.
  EXPECT_STREQ(t.find(OpKind::kAllReduce, 8, 1000).origin, "PSDP_ALGORITHM");
  EXPECT_EQ(t.find(OpKind::kAllReduce, 4, 64 * KiB).algorithm, Algorithm::kRing);
  const AlgorithmRule& gather = t.find(OpKind::kAllGather, 2, 4 * MiB);
  EXPECT_EQ(gather.algorithm, Algorithm::kDirect);
  EXPECT_EQ(gather.fallback, Algorithm::kRecursive);
  EXPECT_FALSE(gather.cma);
  EXPECT_TRUE(gather.streaming);
  const AlgorithmRule& scatter = t.find(OpKind::kReduceScatter, 3, 5);
  EXPECT_EQ(scatter.fragment_bytes, 256 * KiB);
  EXPECT_EQ(scatter.depth, 16);
  EXPECT_EQ(t.maxDepth(), 16);
  EXPECT_EQ(t.maxFragmentBytes(64 * KiB), 256 * KiB);
}

TEST(AlgorithmTableTest, ForcedDirectTriesEverySizeWithCma) {
  auto table = AlgorithmTable::make(PSDP_ALGORITHM_DIRECT, "");
  ASSERT_TRUE(table.isOk());
  const AlgorithmRule& small = table.value().find(OpKind::kAllReduce, 2, 8);
  EXPECT_EQ(small.algorithm, Algorithm::kDirect);
  EXPECT_EQ(small.fallback, Algorithm::kRecursive);
  EXPECT_TRUE(small.cma);
  EXPECT_EQ(table.value().find(OpKind::kBroadcast, 2, MiB).fallback, Algorithm::kRing);
  EXPECT_TRUE(table.value().find(OpKind::kAllGather, 2, 64 * MiB).streaming);
  EXPECT_EQ(small.backoff, 0) << "forced direct offers every time";
}

TEST(AlgorithmTableTest, BackoffIsARuleOption) {
  auto table = AlgorithmTable::make(PSDP_ALGORITHM_AUTO, "all-reduce:1M-=direct,backoff=8;all-gather:1M-=direct");
  ASSERT_TRUE(table.isOk()) << table.status().toString();
  EXPECT_EQ(table.value().find(OpKind::kAllReduce, 2, 2 * MiB).backoff, 8);
  EXPECT_EQ(table.value().find(OpKind::kAllGather, 2, 2 * MiB).backoff, 0) << "absent: offers every time";
  EXPECT_NE(AlgorithmTable::formatRule(table.value().rules()[0]).find(",backoff=8"), std::string::npos);
}

TEST(AlgorithmTableTest, FormattedRulesParseBack) {
  auto table = AlgorithmTable::make(PSDP_ALGORITHM_DIRECT,
                                    "*:3K-5M=ring,ranks=3-,fragment=4K,depth=2;all-gather:0-=direct,backoff=5");
  ASSERT_TRUE(table.isOk());
  for (const AlgorithmRule& rule : table.value().rules()) {
    std::string text = AlgorithmTable::formatRule(rule);
    auto parsed = AlgorithmTable::parse(text);
    ASSERT_TRUE(parsed.isOk()) << text << ": " << parsed.status().toString();
    ASSERT_EQ(parsed.value().size(), 1u) << text;
    EXPECT_EQ(AlgorithmTable::formatRule(parsed.value()[0]), text);
  }
}

TEST(AlgorithmTableTest, MalformedRulesAreNamed) {
  const char* bad[][2] = {
      {"all-reduce:0-64K", "rule 1"},
      {"allreduce:0-64K=ring", "unknown collective 'allreduce'"},
      {"all-reduce:0-64K=tree", "unknown algorithm 'tree'"},
      {"all-reduce:64K-0=ring", "is empty"},
      {"all-reduce:0=ring", "not <min>-<max>"},
      {"all-reduce:0-12Q=ring", "12Q"},
      {"*:0-=ring;all-reduce:0-=direct,fallback=direct", "rule 2"},
      {"*:0-=direct,cma=2", "'2' is not 0 or 1"},
      {"*:0-=ring,depth=65", "depth 65"},
      {"*:0-=ring,fragment=8", "fragment of 8 bytes"},
      {"*:0-=ring,ranks=4-2", "rank range"},
      {"*:0-=ring,colour=red", "unknown option 'colour'"},
      {"*:0-=direct,backoff=70000", "backoff 70000"},
  };
  for (const auto& [text, words] : bad) {
    auto table = AlgorithmTable::make(PSDP_ALGORITHM_AUTO, text);
    ASSERT_FALSE(table.isOk()) << text;
    EXPECT_EQ(table.status().code(), PSDP_ERR_INVALID_ARGUMENT) << text;
    EXPECT_NE(table.status().toString().find(words), std::string::npos) << text << ": " << table.status().toString();
  }
  EXPECT_TRUE(AlgorithmTable::make(PSDP_ALGORITHM_AUTO, " ; ;").isOk());
}

}  // namespace
}  // namespace psdp::coll
