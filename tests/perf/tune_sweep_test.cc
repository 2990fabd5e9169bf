// psdp-tune's choices from a sweep: the winner of a size (with its lead over the built-in rules), the bands of
// the tuning file, and that the file it writes is one the library reads and applies.
#include "tune_sweep.h"

#include <gtest/gtest.h>
#include <psdp/psdp.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace psdp::perf {
namespace {

// A sweep of one collective whose candidate c takes seconds[c][s] at size s, the same in every repetition
// but the middle one, which is off by a factor of 3 (the median ignores it).
OpSweep sweepOf(TuneOp op, std::vector<size_t> sizes, const std::vector<std::vector<double>>& seconds) {
  OpSweep sweep;
  sweep.op = op;
  sweep.sizes = std::move(sizes);
  for (const std::vector<double>& by_size : seconds) {
    std::vector<std::vector<double>> reps;
    for (double s : by_size) reps.push_back({s, 3 * s, s});
    sweep.seconds.push_back(reps);
  }
  return sweep;
}

TEST(TuneSweepTest, CandidatesStartWithTheBuiltInRulesAndAreRulesTheLibraryTakes) {
  for (bool quick : {false, true}) {
    std::vector<TuneCandidate> candidates = tuneCandidates(quick);
    ASSERT_GE(candidates.size(), 5u);
    EXPECT_EQ(candidates[0].rule, "");
    for (size_t c = 1; c < candidates.size(); ++c) {
      psdp_config_t config = PSDP_CONFIG_INITIALIZER;
      config.algorithms = candidates[c].rule.c_str();
      config.tuning_file = "none";
      size_t len = 0;
      EXPECT_EQ(psdp_algorithm_table(&config, nullptr, &len), PSDP_SUCCESS) << candidates[c].rule;
    }
  }
  EXPECT_EQ(tuneCandidates(false).size(), 18u);
}

TEST(TuneSweepTest, SizesGrowByTheFactorUpToTheLargest) {
  EXPECT_EQ(tuneSizes(64 << 10, 1 << 20, 4), (std::vector<size_t>{64 << 10, 256 << 10, 1 << 20}));
  EXPECT_EQ(tuneSizes(1000, 5000, 2), (std::vector<size_t>{1000, 2000, 4000}));
}

TEST(TuneSweepTest, ACandidateWinsOnlyWithALeadOverTheBuiltInRules) {
  // Candidate 1 is 10% faster at size 0, 2% faster at size 1 (within the noise: the built-in rules stay).
  OpSweep sweep = sweepOf(TuneOp::kAllReduce, {1 << 20, 4 << 20}, {{1.0, 1.0}, {0.9, 0.98}, {1.2, 1.1}});
  EXPECT_DOUBLE_EQ(sweep.median(1, 0), 0.9);
  EXPECT_EQ(sweep.winner(0), 1u);
  EXPECT_EQ(sweep.winner(1), 0u);
  // One lucky run out of three is no lead: the median is the built-in rules' or above.
  sweep.seconds = {{{1.0, 1.0, 1.0}}, {{0.5, 1.1, 1.1}}};
  sweep.sizes = {1 << 20};
  EXPECT_EQ(sweep.winner(0), 0u);
  sweep.seconds[1][0] = {0.5, 0.9, 1.1};  // a median of 0.9 but faster in only two of three: not enough
  EXPECT_EQ(sweep.winner(0), 0u);
  sweep.seconds[1][0] = {0.5, 0.9, 0.95};
  EXPECT_EQ(sweep.winner(0), 1u);
}

TEST(TuneSweepTest, BandsRunFromEachSizeToTheNextMergedWhereTheWinnerStays) {
  const std::vector<TuneCandidate> candidates = {
      {"built-in", "", "", ""}, {"rhd", "*:0-=rhd", "algorithm=rhd", ""}, {"ring", "*:0-=ring", "algorithm=ring", ""}};
  // Sizes 64K 256K 1M 4M: rhd, rhd, built-in, ring.
  OpSweep ar = sweepOf(TuneOp::kAllReduce, {64 << 10, 256 << 10, 1 << 20, 4 << 20},
                       {{1, 1, 1, 1}, {0.5, 0.5, 1, 2}, {2, 2, 2, 0.5}});
  OpSweep ag = sweepOf(TuneOp::kAllGather, {64 << 10}, {{1}, {2}, {2}});
  const std::string text = tuningFileText(
      {"measured by a test"}, "provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2", 2, candidates, {ar, ag});
  EXPECT_EQ(text,
            "psdp-tuning 1\n"
            "# measured by a test\n"
            "signature provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2\n"
            "all-reduce ranks=2 bytes=64K-1M algorithm=rhd\n"
            "all-reduce ranks=2 bytes=4M-inf algorithm=ring\n");
  const std::string table = sweepTable(2, candidates, {ar});
  EXPECT_NE(table.find("winner / built-in"), std::string::npos) << table;
  EXPECT_NE(table.find("2.00x"), std::string::npos) << table;

  // The library reads the file and, for that signature, serves the bands with its rules.
  char path[] = "/tmp/psdp_tune_sweep_test.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << text;
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  config.tuning_file = path;
  char out[16384];
  size_t len = sizeof(out);
  ASSERT_EQ(psdp_algorithm_table_for(&config, "provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2", out, &len),
            PSDP_SUCCESS)
      << psdp_get_last_error(nullptr);
  const std::string applied = out;
  EXPECT_NE(applied.find("all-reduce:64K-1M=rhd,ranks=2-2"), std::string::npos) << applied;
  EXPECT_NE(applied.find("# tuning file line 5"), std::string::npos) << applied;
  std::remove(path);
}

TEST(TuneSweepTest, VerifyFindsTheWorstSlowdownOfTheTunedRules) {
  OpSweep ar = sweepOf(TuneOp::kAllReduce, {1 << 20, 4 << 20}, {{1.0, 1.0}, {0.5, 1.2}});
  OpSweep ag = sweepOf(TuneOp::kAllGather, {1 << 20}, {{1.0}, {1.1}});
  const Slowdown worst = worstSlowdown({ar, ag});
  EXPECT_DOUBLE_EQ(worst.ratio, 1.2);
  EXPECT_STREQ(worst.collective, "all-reduce");
  EXPECT_EQ(worst.bytes, size_t{4} << 20);
  EXPECT_EQ(verifyCandidates("/t")[1].tuning_file, "/t");
}

TEST(TuneSweepTest, JsonHoldsEveryRepetition) {
  const std::vector<TuneCandidate> candidates = {{"built-in", "", "", ""}, {"rhd", "*:0-=rhd", "algorithm=rhd", ""}};
  OpSweep rs = sweepOf(TuneOp::kReduceScatter, {1 << 20}, {{0.25}, {0.5}});
  const std::string json = sweepJson("provider=ucx lanes=tcp hosts=2 ranks-per-host=1", 2, candidates, {rs});
  EXPECT_NE(json.find("\"collective\": \"reduce-scatter\""), std::string::npos) << json;
  EXPECT_NE(json.find("[[0.25, 0.75, 0.25]]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"winners\": [0]"), std::string::npos) << json;
}

}  // namespace
}  // namespace psdp::perf
