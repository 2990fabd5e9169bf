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

// The algorithm table the library makes from tuning file `text` for the 2-rank shared-memory signature.
std::string appliedTable(const std::string& text) {
  char path[] = "/tmp/psdp_tune_sweep_test.XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "mkstemp failed";
  close(fd);
  std::ofstream(path) << text;
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  config.tuning_file = path;
  char out[16384];
  size_t len = sizeof(out);
  const psdp_status_t s =
      psdp_algorithm_table_for(&config, "provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2", out, &len);
  std::remove(path);
  return s == PSDP_SUCCESS ? std::string(out) : std::string("error: ") + psdp_get_last_error(nullptr);
}

TEST(TuneSweepTest, BandsRunFromEachSizeToTheNextMergedWhereTheWinnerStays) {
  const std::vector<TuneCandidate> candidates = {
      {"built-in", "", "", ""}, {"rhd", "*:0-=rhd", "algorithm=rhd", ""}, {"ring", "*:0-=ring", "algorithm=ring", ""}};
  // Sizes 64K 256K 1M 4M: rhd, rhd, built-in, ring.
  OpSweep ar = sweepOf(TuneOp::kAllReduce, {64 << 10, 256 << 10, 1 << 20, 4 << 20},
                       {{1, 1, 1, 1}, {0.5, 0.5, 1, 2}, {2, 2, 2, 0.5}});
  OpSweep ag = sweepOf(TuneOp::kAllGather, {64 << 10}, {{1}, {2}, {2}});
  const std::string text = tuningFileText(
      {"measured by a test"}, "provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2", 2, candidates, {ar, ag}, {});
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
  const std::string applied = appliedTable(text);
  EXPECT_NE(applied.find("all-reduce:64K-1M=rhd,ranks=2-2"), std::string::npos) << applied;
  EXPECT_NE(applied.find("# tuning file line 5"), std::string::npos) << applied;
}

TEST(TuneSweepTest, VerifyFindsTheWorstSlowdownOfTheTunedRules) {
  OpSweep ar = sweepOf(TuneOp::kAllReduce, {1 << 20, 4 << 20}, {{1.0, 1.0}, {0.5, 1.2}});
  OpSweep ag = sweepOf(TuneOp::kAllGather, {1 << 20}, {{1.0}, {1.1}});
  const Slowdown worst = worstSlowdown({ar, ag}, {});
  EXPECT_DOUBLE_EQ(worst.ratio, 1.2);
  EXPECT_STREQ(worst.collective, "all-reduce");
  EXPECT_EQ(worst.bytes, size_t{4} << 20);
  EXPECT_EQ(verifyCandidates("/t")[1].tuning_file, "/t");
}

TEST(TuneSweepTest, AgainstAReferenceTheBandsHaveTheirOwnBoundsAndTheBuiltInStaysAFloor) {
  const std::vector<TuneCandidate> candidates = verifyCandidates("/tuned", "/full");
  ASSERT_EQ(candidates.size(), 4u);
  EXPECT_EQ(candidates[2].tuning_file, "/full");
  EXPECT_TRUE(candidates[3].rule.empty() && candidates[3].tuning_file.empty());  // the built-in's twin
  EXPECT_EQ(verifyCandidates("/tuned").size(), 2u);
  // Candidates: built-in, tuned, reference, built-in twin. 4M: tuned 1.12x the reference (within 15%); 16M:
  // 1.04x (within 5%); 64M on the all-gather: 1.06x, beyond 5%. The twin lands 8% off the built-in at most.
  OpSweep ar =
      sweepOf(TuneOp::kAllReduce, {4 << 20, 16 << 20}, {{1.2, 1.1}, {1.12, 1.04}, {1.0, 1.0}, {1.2 * 1.08, 1.1}});
  OpSweep ag = sweepOf(TuneOp::kAllGather, {64 << 20}, {{1.1}, {1.06}, {1.0}, {1.1 / 1.05}});
  AcceptanceVerdict verdict = judgeAgainstReference({ar});
  EXPECT_TRUE(verdict.passed());
  EXPECT_DOUBLE_EQ(verdict.worst_small.ratio, 1.12);
  EXPECT_DOUBLE_EQ(verdict.worst_large.ratio, 1.04);
  EXPECT_NEAR(verdict.noise.ratio, 1.08, 1e-12);
  EXPECT_EQ(verdict.noise.bytes, size_t{4} << 20);
  verdict = judgeAgainstReference({ar, ag});
  EXPECT_FALSE(verdict.passed());
  EXPECT_DOUBLE_EQ(verdict.worst_large.ratio, 1.06);
  EXPECT_STREQ(verdict.worst_large.collective, "all-gather");
  EXPECT_EQ(verdict.worst_large.bytes, size_t{64} << 20);
  // Level with the reference but 10% slower than the built-in rules: not accepted.
  OpSweep rs = sweepOf(TuneOp::kReduceScatter, {1 << 20}, {{1.0}, {1.1}, {1.1}, {1.0}});
  verdict = judgeAgainstReference({rs});
  EXPECT_FALSE(verdict.passed());
  EXPECT_DOUBLE_EQ(verdict.worst_builtin.ratio, 1.1);
  const std::string table = acceptanceTable(2, {ar, ag});
  EXPECT_NE(table.find("1.060!"), std::string::npos) << table;
  EXPECT_NE(table.find("1.120 "), std::string::npos) << table;
  EXPECT_NE(table.find("1.080\n"), std::string::npos) << table;
}

TEST(TuneSweepTest, JsonHoldsEveryRepetition) {
  const std::vector<TuneCandidate> candidates = {{"built-in", "", "", ""}, {"rhd", "*:0-=rhd", "algorithm=rhd", ""}};
  OpSweep rs = sweepOf(TuneOp::kReduceScatter, {1 << 20}, {{0.25}, {0.5}});
  const std::string json = sweepJson("provider=ucx lanes=tcp hosts=2 ranks-per-host=1", 2, candidates, {rs}, {});
  EXPECT_NE(json.find("\"collective\": \"reduce-scatter\""), std::string::npos) << json;
  EXPECT_NE(json.find("[[0.25, 0.75, 0.25]]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"winners\": [0]"), std::string::npos) << json;
}

EngineSweep engineSweepOf(size_t chunk_bytes, std::vector<std::vector<double>> seconds) {
  EngineSweep sweep;
  sweep.chunk_bytes = chunk_bytes;
  sweep.chunks = 10;
  sweep.candidates = engineCandidates(false, chunk_bytes);
  sweep.seconds.assign(sweep.candidates.size(), std::vector<double>(seconds[0].size(), 9.0));
  for (size_t c = 0; c < seconds.size(); ++c) sweep.seconds[c] = seconds[c];
  return sweep;
}

TEST(TuneSweepTest, EngineCandidatesStartWithTheBuiltInAndKeepTransfersWithin64M) {
  const std::vector<EngineCandidate> small = engineCandidates(false, size_t{1} << 20);
  ASSERT_FALSE(small.empty());
  EXPECT_EQ(small[0], kBuiltInEngine);
  EXPECT_EQ(small.size(), 20u);                                      // windows 1, 2, 4, 8 by groupings 1-16
  EXPECT_EQ(engineCandidates(false, size_t{16} << 20).size(), 12u);  // groupings 1, 2, 4
  const std::vector<EngineCandidate> whole = engineCandidates(false, size_t{64} << 20);
  EXPECT_EQ(whole.size(), 4u);
  for (const EngineCandidate& c : whole) EXPECT_EQ(c.grouping, 1u) << c.name();
  EXPECT_EQ(engineCandidates(true, size_t{4} << 20).size(), 6u);  // windows 1, 2, 4 by groupings 1 and 4
  EXPECT_EQ(engineCandidates(true, size_t{64} << 20).size(), 3u);
  EXPECT_EQ(small[1].name(), "window 1 x1");
  EXPECT_EQ((EngineCandidate{0, 0}).name(), "tuned");
}

TEST(TuneSweepTest, EngineRulesRunByChunkSizeAndTheBuiltInWritesNone) {
  // Candidate 0 is the built-in (window 2 x1); at 1M and 4M the last candidate (window 8 x16 at 1M,
  // window 8 x16 at 4M: the same setting) wins clearly; at 16M and 64M the built-in stays.
  std::vector<EngineSweep> engine;
  for (size_t chunk : engineChunkSizes(false)) {
    EngineSweep sweep = engineSweepOf(chunk, {{1.0, 1.0, 1.0}});
    if (chunk <= (size_t{4} << 20)) {
      sweep.seconds.back() = {0.5, 0.5, 0.5};
      EXPECT_EQ(sweep.candidates.back(), (EngineCandidate{8, 16}));
    }
    engine.push_back(sweep);
  }
  EXPECT_EQ(engine[0].winner(), engine[0].candidates.size() - 1);
  EXPECT_EQ(engine[2].winner(), 0u);
  const std::string text = tuningFileText({}, "provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2", 2,
                                          {{"built-in", "", "", ""}}, {}, engine);
  EXPECT_EQ(text,
            "psdp-tuning 1\n"
            "signature provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2\n"
            "engine ranks=2 chunk-bytes=1M-16M window=8 grouping=16\n");
  const std::string table = engineTable(2, engine);
  EXPECT_NE(table.find("plan chunks of 1M (10)"), std::string::npos) << table;
  EXPECT_NE(table.find("2.00x"), std::string::npos) << table;
  const std::string json = sweepJson("s", 2, {{"built-in", "", "", ""}}, {}, engine);
  EXPECT_NE(json.find("\"chunk_bytes\": 1048576, \"chunks\": 10, \"winner\": 19"), std::string::npos) << json;

  // The library reads the rule and serves it to states whose plan chunks are 1M up to 16M.
  const std::string applied = appliedTable(text);
  EXPECT_NE(applied.find("engine ranks=2 chunk-bytes=1M-16M window=8 grouping=16"), std::string::npos) << applied;
}

TEST(TuneSweepTest, VerifyCountsTheEngine) {
  EngineSweep sweep;
  sweep.chunk_bytes = size_t{4} << 20;
  sweep.candidates = {kBuiltInEngine, {0, 0}};
  sweep.seconds = {{1.0, 1.0, 1.0}, {1.3, 1.3, 1.3}};
  OpSweep ar = sweepOf(TuneOp::kAllReduce, {1 << 20}, {{1.0}, {1.1}});
  const Slowdown worst = worstSlowdown({ar}, {sweep});
  EXPECT_DOUBLE_EQ(worst.ratio, 1.3);
  EXPECT_STREQ(worst.collective, "engine");
  EXPECT_EQ(worst.bytes, size_t{4} << 20);
}

}  // namespace
}  // namespace psdp::perf
