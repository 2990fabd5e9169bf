// The largest counts of the multi-rank collective tests (label "long"): 1M+3 elements, with 1 KiB
// fragments (thousands per block) and the default 1 MiB; float32 out of place, int32 in place.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "unit/coll/collective_cases.h"

namespace psdp::coll::test {
namespace {

constexpr std::array<size_t, 1> kCounts = {1000003};
constexpr std::array<size_t, 2> kFragmentBytes = {1024, 1 << 20};
constexpr std::array<CaseKind, 3> kKinds = {CaseKind::kReduceScatter, CaseKind::kAllGather, CaseKind::kAllReduce};

class CollectivesLongTest : public ::testing::TestWithParam<psdp_progress_mode_t> {
 protected:
  void run(int nranks) {
    UcxWorld* world = sharedWorld(nranks, GetParam());
    ASSERT_NE(world, nullptr);
    // float32 and int32 take the same data path but for the kernel, so each is run one way only here.
    std::vector<CollCase> cases;
    for (const CollCase& c : combineCases(kKinds, kCounts)) {
      if (c.in_place == (c.dtype == PSDP_INT32)) cases.push_back(c);
    }
    runCases(*world, cases, kFragmentBytes);
  }
};

TEST_P(CollectivesLongTest, TwoRanks) {
  run(2);
}
TEST_P(CollectivesLongTest, ThreeRanks) {
  run(3);
}
TEST_P(CollectivesLongTest, FourRanks) {
  run(4);
}
TEST_P(CollectivesLongTest, SevenRanks) {
  run(7);
}

INSTANTIATE_TEST_SUITE_P(Modes, CollectivesLongTest, ::testing::Values(PSDP_PROGRESS_THREAD, PSDP_PROGRESS_CALLER),
                         [](const ::testing::TestParamInfo<psdp_progress_mode_t>& info) {
                           return std::string(info.param == PSDP_PROGRESS_CALLER ? "Caller" : "Thread");
                         });

}  // namespace
}  // namespace psdp::coll::test
