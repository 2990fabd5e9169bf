// Online tuning of a state's chunk engine (psdp_step_config_t.online_tuning): during the first steps of a
// run the engine tries windows and groupings of plan chunks per transfer, measures each by the slowest
// rank's step time, and then keeps the fastest for good. None of the anchors (NCCL, UCC, DeepSpeed,
// Megatron-Core, FSDP) tunes a running job; their settings are fixed before it starts.
//
// Search: coordinate descent from the setting the step's config resolved to (the tuning file's engine rule,
// else the built-in 2 and 1). First the windows 1, 2, 4 and 8 at the starting grouping, then the groupings
// 1, 2, 4, 8 and 16 at the best window, pruned to transfers of at most 64 MiB and at most the plan's chunks,
// then, where another grouping won, the windows again at that grouping.
// Each setting runs kSamples steps and counts its fastest (a step that grows the pack buffers or meets a
// noisy neighbour must not decide); a setting replaces the best so far only when at least kMinGain faster.
// The first step of a run is discarded (it touches every page and sizes the pack buffers).
//
// Every rank feeds the same measurements (the slowest rank's time, agreed at each step's begin: see
// engine/state_engine.h) in the same order, so every rank makes the same choices without a message of their
// own. Pure: no clock, no communication.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace psdp::engine {

struct EngineSetting {
  size_t window = 2;    // reduce and gather windows, alike
  size_t grouping = 1;  // plan chunks per transfer
  bool operator==(const EngineSetting&) const = default;
};

enum class TuningPhase : uint8_t { kOff, kExploring, kFrozen };

class OnlineTuner {
 public:
  static constexpr int kSamples = 2;
  static constexpr double kMinGain = 1.03;
  static constexpr size_t kMaxTransferBytes = size_t{64} << 20;

  // Starts tuning from `start` (the first step's setting). tune_window / tune_grouping: what psdp may change
  // (the caller fixed the others; grouping never in deterministic mode, where it would change the order of
  // reductions). chunk_bytes and chunks: the plan's, which bound the groupings. With nothing to tune the
  // tuner is frozen at once, at `start`.
  void start(EngineSetting start, bool tune_window, bool tune_grouping, size_t chunk_bytes, size_t chunks);

  TuningPhase phase() const { return phase_; }
  // The setting of the next step: the one being measured while exploring, the choice once frozen.
  EngineSetting next() const;
  // The slowest rank's seconds of the last step, which ran with next(). Ignored unless exploring.
  void record(double seconds);

  // Steps measured (the discarded first one included).
  size_t steps() const { return steps_; }
  // The best setting so far (the choice once frozen), its fastest step, and the starting setting's.
  EngineSetting best() const { return best_; }
  double bestSeconds() const { return best_seconds_; }
  double startSeconds() const { return start_seconds_; }
  // True once, for the call after the step that froze the choice: whoever logs it.
  bool takeFrozenNews();

 private:
  // Queue the windows (or groupings) at the best setting so far, the start first while it is unmeasured.
  void beginWindows();
  void beginGroupings();
  void advance();

  TuningPhase phase_ = TuningPhase::kOff;
  bool tune_grouping_ = false;
  size_t chunk_bytes_ = 0, chunks_ = 0;
  EngineSetting best_;
  double best_seconds_ = 0, start_seconds_ = 0;
  std::vector<EngineSetting> queue_;  // settings still to measure in this dimension, the current one first
  int samples_ = 0;                   // of queue_.front()
  double fastest_ = 0;                // of queue_.front()'s samples
  bool warmed_up_ = false;
  bool tune_window_ = false;
  int pass_ = 0;                    // 0 windows, 1 groupings, 2 windows at the grouping that won
  size_t windows_at_grouping_ = 0;  // the grouping of the last pass over windows
  bool frozen_news_ = false;
  size_t steps_ = 0;
};

}  // namespace psdp::engine
