// Online tuning of a state's chunk engine (psdp_step_config_t.online_tuning): during the first steps of a
// run the engine tries windows, groupings of plan chunks per transfer and fragment sizes of its collectives'
// ring transfers, measures each by the slowest rank's step time, and then keeps the fastest for good. None
// of the anchors (NCCL, UCC, DeepSpeed, Megatron-Core, FSDP) tunes a running job; their settings are fixed
// before it starts.
//
// Search: coordinate descent from the setting the step's config resolved to (the tuning file's engine rule,
// else the built-in 2 and 1 and the collectives' own fragment). First the windows 1, 2, 4 and 8 at the starting
// grouping, then the groupings 1, 2, 4, 8 and 16 at the best window, pruned to transfers of at most 64 MiB
// and at most the plan's chunks, then, where another grouping won, the windows again at that grouping; last
// the fragments 128 KiB to 4 MiB at the best window and grouping, pruned to what the teams' staging holds and
// to fragments smaller than the largest ring block the best setting's steps moved (a fragment at least a
// block moves it whole, as any larger one would; where every transfer ran direct there is nothing to try).
// Each setting runs kSamples steps and counts its fastest (a step that grows the pack buffers or meets a
// noisy neighbour must not decide); a setting replaces the best so far only when at least kMinGain faster.
// The first step of a run is discarded (it touches every page and sizes the pack buffers).
//
// Every rank feeds the same measurements (the slowest rank's time and the largest ring block of any rank,
// agreed at each step's begin: see engine/state_engine.h) in the same order, so every rank makes the same
// choices without a message of their own. Pure: no clock, no communication.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace psdp::engine {

struct EngineSetting {
  size_t window = 2;          // reduce and gather windows, alike
  size_t grouping = 1;        // plan chunks per transfer
  size_t fragment_bytes = 0;  // of the teams' ring transfers; 0: the collectives' own (their rules')
  bool operator==(const EngineSetting&) const = default;
};

// What the tuner may change (the caller fixed the others; grouping never in deterministic mode, where it
// would change the order of reductions) and the bounds it searches within.
struct TuningScope {
  bool window = false;
  bool grouping = false;
  bool fragment = false;
  size_t chunk_bytes = 0;  // the plan's chunk size and count, which bound the groupings
  size_t chunks = 0;
  size_t largest_fragment_bytes = 0;  // what every team's staging holds, which bounds the fragments
};

enum class TuningPhase : uint8_t { kOff, kExploring, kFrozen };

class OnlineTuner {
 public:
  static constexpr int kSamples = 2;
  static constexpr double kMinGain = 1.03;
  static constexpr size_t kMaxTransferBytes = size_t{64} << 20;
  // At most 4 windows, 4 other groupings, 3 windows again and 6 fragments, kSamples steps each, and the
  // discarded first step.
  static constexpr size_t kMostSteps = 1 + kSamples * (4 + 4 + 3 + 6);

  // Starts tuning from `start` (the first step's setting) within `scope`. With nothing to tune the tuner is
  // frozen at once, at `start`.
  void start(EngineSetting start, const TuningScope& scope);

  TuningPhase phase() const { return phase_; }
  // The setting of the next step: the one being measured while exploring, the choice once frozen.
  EngineSetting next() const;
  // The slowest rank's seconds of the last step, which ran with next(), and the largest block a ring
  // transfer of any rank moved in it (Collectives::takeLargestRingBlock). Ignored unless exploring.
  void record(double seconds, size_t ring_block_bytes);

  // Steps measured (the discarded first one included).
  size_t steps() const { return steps_; }
  // The best setting so far (the choice once frozen), its fastest step, and the starting setting's.
  EngineSetting best() const { return best_; }
  double bestSeconds() const { return best_seconds_; }
  double startSeconds() const { return start_seconds_; }
  // True once, for the call after the step that froze the choice: whoever logs it.
  bool takeFrozenNews();

 private:
  void beginPass();
  // Moves pass_ on; false after the last.
  bool nextPass();
  void queueWindows();
  void queueGroupings();
  void queueFragments();
  void advance();
  void freeze();

  enum class Pass : uint8_t { kWindows, kGroupings, kWindowsAgain, kFragments };

  TuningPhase phase_ = TuningPhase::kOff;
  TuningScope scope_;
  EngineSetting best_;
  double best_seconds_ = 0, start_seconds_ = 0;
  size_t best_ring_block_ = 0;        // the largest ring block of the best setting's steps
  std::vector<EngineSetting> queue_;  // settings still to measure in this pass, the current one first
  int samples_ = 0;                   // of queue_.front()
  double fastest_ = 0;                // of queue_.front()'s samples
  size_t ring_block_ = 0;             // the largest of queue_.front()'s samples
  bool warmed_up_ = false;
  Pass pass_ = Pass::kWindows;
  size_t windows_at_grouping_ = 0;  // the grouping of the last pass over windows
  bool frozen_news_ = false;
  size_t steps_ = 0;
};

}  // namespace psdp::engine
