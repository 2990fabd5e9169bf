// The online tuner's search, fed step times by hand: the order it tries settings in, what it keeps, and
// what it ignores.
#include "engine/online_tuner.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace psdp::engine {
namespace {

constexpr size_t MiB = size_t{1} << 20;

constexpr size_t KiB = size_t{1} << 10;

TuningScope scope(bool window, bool grouping, size_t chunk_bytes, size_t chunks, bool fragment = false,
                  size_t largest_fragment_bytes = 1 * MiB) {
  TuningScope s;
  s.window = window;
  s.grouping = grouping;
  s.fragment = fragment;
  s.chunk_bytes = chunk_bytes;
  s.chunks = chunks;
  s.largest_fragment_bytes = largest_fragment_bytes;
  return s;
}

// Runs steps until the tuner is frozen (at most 64), each timed by `seconds` of its setting and moving ring
// blocks of `ring_block` bytes (default: none, every transfer direct); returns the setting of each step, the
// first (not counted) included.
std::vector<EngineSetting> drive(OnlineTuner& tuner, const std::function<double(EngineSetting)>& seconds,
                                 const std::function<size_t(EngineSetting)>& ring_block = nullptr) {
  std::vector<EngineSetting> ran;
  for (int i = 0; i < 64 && tuner.phase() == TuningPhase::kExploring; ++i) {
    const EngineSetting s = tuner.next();
    ran.push_back(s);
    tuner.record(seconds(s), ring_block ? ring_block(s) : 0);
  }
  return ran;
}

TEST(OnlineTunerTest, TriesWindowsThenGroupingsAtTheBestWindowTwoStepsEach) {
  OnlineTuner tuner;
  tuner.start({2, 1}, scope(true, true, 1 * MiB, 100));
  ASSERT_EQ(tuner.phase(), TuningPhase::kExploring);
  // Window 4 is best; at window 4, grouping 8 is best; then the windows again at grouping 8, where 4 stays.
  const auto ran = drive(tuner, [](EngineSetting s) {
    double t = s.window == 4 ? 1.0 : 1.5;
    return t * (s.grouping == 8 ? 0.8 : 1.0);
  });
  const std::vector<EngineSetting> want = {{2, 1},  {2, 1}, {2, 1}, {1, 1}, {1, 1}, {4, 1}, {4, 1}, {8, 1},
                                           {8, 1},  {4, 2}, {4, 2}, {4, 4}, {4, 4}, {4, 8}, {4, 8}, {4, 16},
                                           {4, 16}, {1, 8}, {1, 8}, {2, 8}, {2, 8}, {8, 8}, {8, 8}};
  EXPECT_EQ(ran, want);
  EXPECT_EQ(tuner.phase(), TuningPhase::kFrozen);
  EXPECT_EQ(tuner.best(), (EngineSetting{4, 8}));
  EXPECT_EQ(tuner.next(), (EngineSetting{4, 8}));
  EXPECT_DOUBLE_EQ(tuner.bestSeconds(), 0.8);
  EXPECT_DOUBLE_EQ(tuner.startSeconds(), 1.5);
  EXPECT_EQ(tuner.steps(), 23u);
  EXPECT_TRUE(tuner.takeFrozenNews());
  EXPECT_FALSE(tuner.takeFrozenNews());
  tuner.record(0.1, 0);  // frozen: ignored
  EXPECT_EQ(tuner.best(), (EngineSetting{4, 8}));
  EXPECT_EQ(tuner.steps(), 23u);
}

TEST(OnlineTunerTest, LeavesABadStartAndRetunesTheWindowsAtTheGroupingThatWon) {
  // As measured here: grouping costs (it packs), and window 8 is best once each chunk runs alone.
  OnlineTuner tuner;
  tuner.start({1, 8}, scope(true, true, 4 * MiB, 236));
  drive(tuner, [](EngineSetting s) { return (s.grouping == 1 ? 0.6 : 0.9) - (s.window == 8 ? 0.05 : 0.0); });
  EXPECT_EQ(tuner.phase(), TuningPhase::kFrozen);
  EXPECT_EQ(tuner.best(), (EngineSetting{8, 1}));
  EXPECT_DOUBLE_EQ(tuner.startSeconds(), 0.9);
}

TEST(OnlineTunerTest, KeepsTheStartUnlessAnotherIsClearlyFasterCountingEachSettingsFasterStep) {
  OnlineTuner tuner;
  tuner.start({2, 1}, scope(true, false, 1 * MiB, 100));
  int step = 0;
  drive(tuner, [&](EngineSetting s) {
    ++step;
    if (s.window == 1) return 0.98;                  // 2% faster: within the noise, not taken
    if (s.window == 8) return step % 2 ? 5.0 : 0.9;  // one slow step, one 10% faster: the faster counts
    return 1.0;
  });
  EXPECT_EQ(tuner.phase(), TuningPhase::kFrozen);
  EXPECT_EQ(tuner.best(), (EngineSetting{8, 1}));
  EXPECT_DOUBLE_EQ(tuner.bestSeconds(), 0.9);
}

TEST(OnlineTunerTest, GroupingsStayWithin64MiBTransfersAndThePlansChunks) {
  OnlineTuner tuner;
  tuner.start({2, 1}, scope(false, true, 16 * MiB, 100));  // 16M x 4 = 64M: groupings 2 and 4
  auto ran = drive(tuner, [](EngineSetting) { return 1.0; });
  EXPECT_EQ(ran, (std::vector<EngineSetting>{{2, 1}, {2, 1}, {2, 1}, {2, 2}, {2, 2}, {2, 4}, {2, 4}}));
  EXPECT_EQ(tuner.best(), (EngineSetting{2, 1}));

  tuner.start({1, 1}, scope(false, true, 1 * MiB, 3));  // three chunks: grouping 2 only
  ran = drive(tuner, [](EngineSetting s) { return s.grouping == 2 ? 0.5 : 1.0; });
  EXPECT_EQ(ran, (std::vector<EngineSetting>{{1, 1}, {1, 1}, {1, 1}, {1, 2}, {1, 2}}));
  EXPECT_EQ(tuner.best(), (EngineSetting{1, 2}));

  tuner.start({2, 1}, scope(false, true, 64 * MiB, 100));  // nothing to group: the start is measured, and kept
  ran = drive(tuner, [](EngineSetting) { return 1.0; });
  EXPECT_EQ(ran.size(), 3u);
  EXPECT_EQ(tuner.phase(), TuningPhase::kFrozen);
}

TEST(OnlineTunerTest, NothingToTuneIsFrozenAtOnceAndMeaninglessTimesAreIgnored) {
  OnlineTuner tuner;
  EXPECT_EQ(tuner.phase(), TuningPhase::kOff);
  tuner.start({4, 2}, scope(false, false, 1 * MiB, 100));
  EXPECT_EQ(tuner.phase(), TuningPhase::kFrozen);
  EXPECT_EQ(tuner.next(), (EngineSetting{4, 2}));
  EXPECT_FALSE(tuner.takeFrozenNews());

  tuner.start({2, 1}, scope(true, false, 1 * MiB, 100));
  tuner.record(0.0, 0);  // no time: not a step measured
  tuner.record(-1.0, 0);
  EXPECT_EQ(tuner.steps(), 0u);
  EXPECT_EQ(tuner.next(), (EngineSetting{2, 1}));
}

TEST(OnlineTunerTest, TriesFragmentsLastAtTheBestWindowAndGrouping) {
  OnlineTuner tuner;
  tuner.start({2, 1}, scope(true, false, 4 * MiB, 100, true, 1 * MiB));
  // Window 4 wins; the ring blocks are 2 MiB, the staging holds 1 MiB: fragments 128K to 1M; 256K wins.
  const auto ran = drive(
      tuner, [](EngineSetting s) { return (s.window == 4 ? 1.0 : 1.2) * (s.fragment_bytes == 256 * KiB ? 0.9 : 1.0); },
      [](EngineSetting) { return 2 * MiB; });
  const std::vector<EngineSetting> want = {{2, 1},
                                           {2, 1},
                                           {2, 1},
                                           {1, 1},
                                           {1, 1},
                                           {4, 1},
                                           {4, 1},
                                           {8, 1},
                                           {8, 1},
                                           {4, 1, 128 * KiB},
                                           {4, 1, 128 * KiB},
                                           {4, 1, 256 * KiB},
                                           {4, 1, 256 * KiB},
                                           {4, 1, 512 * KiB},
                                           {4, 1, 512 * KiB},
                                           {4, 1, 1 * MiB},
                                           {4, 1, 1 * MiB}};
  EXPECT_EQ(ran, want);
  EXPECT_EQ(tuner.phase(), TuningPhase::kFrozen);
  EXPECT_EQ(tuner.best(), (EngineSetting{4, 1, 256 * KiB}));
  EXPECT_DOUBLE_EQ(tuner.bestSeconds(), 0.9);
}

TEST(OnlineTunerTest, FragmentsStayBelowTheLargestRingBlockAndWithinTheStaging) {
  OnlineTuner tuner;
  tuner.start({2, 1, 0}, scope(false, false, 1 * MiB, 100, true, 4 * MiB));  // only the fragment
  auto ran = drive(
      tuner, [](EngineSetting) { return 1.0; }, [](EngineSetting) { return 300 * KiB; });
  EXPECT_EQ(ran,
            (std::vector<EngineSetting>{
                {2, 1}, {2, 1}, {2, 1}, {2, 1, 128 * KiB}, {2, 1, 128 * KiB}, {2, 1, 256 * KiB}, {2, 1, 256 * KiB}}));
  EXPECT_EQ(tuner.best(), (EngineSetting{2, 1, 0}));  // none clearly faster: the collectives' own stays

  tuner.start({2, 1, 0}, scope(false, false, 1 * MiB, 100, true, 64 * MiB));
  ran = drive(
      tuner, [](EngineSetting s) { return s.fragment_bytes == 4 * MiB ? 0.5 : 1.0; },
      [](EngineSetting) { return 64 * MiB; });
  EXPECT_EQ(ran.size(), 3u + 2 * 6);  // 128K to 4M, the largest the tuner tries
  EXPECT_EQ(tuner.best(), (EngineSetting{2, 1, 4 * MiB}));
}

TEST(OnlineTunerTest, NoFragmentIsTriedWhereTheBestSettingsTransfersRanDirect) {
  // Grouping 4 makes transfers direct (no ring blocks) and wins: its fragments would change nothing.
  OnlineTuner tuner;
  tuner.start({2, 1}, scope(false, true, 1 * MiB, 100, true, 1 * MiB));
  const auto ran = drive(
      tuner, [](EngineSetting s) { return s.grouping == 4 ? 0.5 : 1.0; },
      [](EngineSetting s) { return s.grouping == 4 ? 0 : 512 * KiB; });
  EXPECT_EQ(tuner.phase(), TuningPhase::kFrozen);
  EXPECT_EQ(tuner.best(), (EngineSetting{2, 4}));
  for (const EngineSetting& s : ran) EXPECT_EQ(s.fragment_bytes, 0u);
  EXPECT_EQ(ran.size(), 3u + 2 * 4);

  // A step where one rank moved a ring block counts: the largest of a setting's steps decides.
  tuner.start({2, 1}, scope(false, false, 1 * MiB, 100, true, 1 * MiB));
  int step = 0;
  drive(
      tuner, [](EngineSetting) { return 1.0; }, [&](EngineSetting) { return ++step == 2 ? 200 * KiB : 0; });
  EXPECT_EQ(tuner.steps(), 3u + 2 * 1);  // 128K only
}

TEST(OnlineTunerTest, EveryDimensionAtOnceFreezesWithinTheStepsTheHeaderPromises) {
  OnlineTuner tuner;
  tuner.start({2, 1}, scope(true, true, 1 * MiB, 100, true, 4 * MiB));
  // Grouping 16 wins, so the windows run again, and every fragment fits below the 64 MiB blocks.
  const auto ran = drive(
      tuner, [](EngineSetting s) { return s.grouping == 16 ? 0.5 : 1.0; }, [](EngineSetting) { return 64 * MiB; });
  EXPECT_EQ(tuner.phase(), TuningPhase::kFrozen);
  EXPECT_EQ(ran.size(), OnlineTuner::kMostSteps);
  EXPECT_EQ(tuner.steps(), OnlineTuner::kMostSteps);
}

}  // namespace
}  // namespace psdp::engine
