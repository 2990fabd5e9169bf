// The provider registry: which provider serves which memory kind, lookups by name, the errors that name
// what is there, and the tables the host providers run with. The providers themselves run in the
// multi-process matrix (tests/mp: mp_matrix_w*_host_ring for host-ring).
#include "coll/provider.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace psdp::coll {
namespace {

TEST(CollectiveProviderTest, HostMemoryDefaultsToTheHostProvider) {
  Result<const CollectiveProvider*> found = findCollectiveProvider(PSDP_MEMORY_HOST, "");
  ASSERT_TRUE(found.isOk()) << found.status().toString();
  EXPECT_STREQ(found.value()->name, "host");
  EXPECT_TRUE(found.value()->serves(PSDP_MEMORY_HOST));
  EXPECT_EQ(found.value()->progress, ProviderProgress::kTransportEvents);
  Result<const CollectiveProvider*> ring = findCollectiveProvider(PSDP_MEMORY_HOST, "host-ring");
  ASSERT_TRUE(ring.isOk()) << ring.status().toString();
  EXPECT_STREQ(ring.value()->name, "host-ring");
}

TEST(CollectiveProviderTest, AnUnknownNameListsTheProvidersOfTheKind) {
  Status status = findCollectiveProvider(PSDP_MEMORY_HOST, "nccl").status();
  EXPECT_EQ(status.code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(status.message().find("'nccl'"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("host, host-ring"), std::string::npos) << status.message();
}

// No provider of this build serves CUDA memory: unsupported, whatever the name asked for.
TEST(CollectiveProviderTest, CudaMemoryHasNoProviderInThisBuild) {
  for (const CollectiveProvider& p : collectiveProviders()) EXPECT_FALSE(p.serves(PSDP_MEMORY_CUDA)) << p.name;
  Status status = findCollectiveProvider(PSDP_MEMORY_CUDA, "").status();
  EXPECT_EQ(status.code(), PSDP_ERR_UNSUPPORTED);
  EXPECT_NE(status.message().find("CUDA memory"), std::string::npos) << status.message();
  EXPECT_EQ(findCollectiveProvider(PSDP_MEMORY_CUDA, "host").status().code(), PSDP_ERR_UNSUPPORTED);
  EXPECT_FALSE(collectiveProviders()[0].serves(static_cast<psdp_memory_kind_t>(40))) << "out of the mask's range";
}

TEST(CollectiveProviderTest, HostRunsTheConfiguredTableAndHostRingOneRingRule) {
  Result<AlgorithmTable> configured = AlgorithmTable::make(PSDP_ALGORITHM_DIRECT, "all-reduce:0-1M=rhd");
  ASSERT_TRUE(configured.isOk()) << configured.status().toString();
  const AlgorithmTable host = findCollectiveProvider(PSDP_MEMORY_HOST, "host").value()->algorithms(configured.value());
  EXPECT_EQ(host.format(), configured.value().format());
  const AlgorithmTable ring =
      findCollectiveProvider(PSDP_MEMORY_HOST, "host-ring").value()->algorithms(configured.value());
  ASSERT_EQ(ring.rules().size(), 1u);
  for (OpKind kind : {OpKind::kAllReduce, OpKind::kReduceScatter, OpKind::kAllGather, OpKind::kBroadcast}) {
    for (size_t bytes : {size_t{4}, size_t{1} << 20, size_t{1} << 30}) {
      const AlgorithmRule& rule = ring.find(kind, 4, bytes);
      EXPECT_EQ(rule.algorithm, Algorithm::kRing);
      EXPECT_EQ(rule.fragment_bytes, 0u) << "the communicator's fragment";
      EXPECT_EQ(rule.depth, 0) << "the default depth";
      EXPECT_STREQ(rule.origin, "provider host-ring");
    }
  }
}

TEST(CollectiveProviderTest, TheListingHasOneLinePerProvider) {
  const std::string text = formatCollectiveProviders();
  EXPECT_EQ(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), collectiveProviders().size());
  EXPECT_NE(text.find("host-ring  memory host  progress transport events"), std::string::npos) << text;
}

}  // namespace
}  // namespace psdp::coll
