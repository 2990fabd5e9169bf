// The chunk engine of one registered state: the teams core made for it (one per stage kind, on the
// registration's context), the pack buffers its steps share (engine/pack_pool.h), and the steps themselves,
// one at a time, numbered from 0. Every rank begins its steps in the same sequence; begin() checks with
// the state's peers that they agree on the step number, the plan and the step's ordering settings.
//
// Online tuning (engine/online_tuner.h) rides on that agreement: each rank adds the time of its last step
// (from the end of begin's agreement to the end of end()) and the largest block its teams' ring transfers
// moved; the first team's all-gather gives every rank its shard group's maxima, which it passes on in the
// second team's, whose maxima are then those of all ranks (every shard group has a member in each replica
// group). So every rank feeds its tuner the same numbers, and the tuner's choices need no message of their
// own.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/log.h"
#include "base/status.h"
#include "engine/online_tuner.h"
#include "engine/pack_pool.h"
#include "engine/step.h"
#include "engine/team.h"
#include "shard/shard_plan.h"

namespace psdp::engine {

class StateEngine {
 public:
  // teams: by stage kind; the replica ones empty (no collectives) when G == W. REQUIRES: each shard team's
  // rank is this rank's member and each replica team's its replica (plan layout); plan and pointers outlive
  // the engine. `log` (may be null): where online tuning says what it chose.
  StateEngine(const shard::ShardPlan& plan, int rank, const std::vector<void*>& pointers, std::vector<Team> teams,
              Logger log = nullptr);
  ~StateEngine();

  // Begins the next step. Collective over the state's teams (one small all-gather on each reduce team).
  // Errors: invalid argument (a window of 0, an op other than sum or avg, a plan without gradients or with
  // CUDA memory: unsupported), invalid usage (the previous step has not ended), mismatch (a peer is at
  // another step, or has another plan or ordering: names it), system (the pack buffers), the teams' errors.
  Result<Step*> begin(StepConfig config);
  // Ends the current step (Step::end); the next begin() may follow once it returned OK.
  Status end(const Deadline& until);
  // Drops the current step, ended or not (a step left in flight fails its teams: see Step).
  void abandon();
  // The timeline of the last step ended or dropped (engine/step_timeline.h); empty before the first.
  const std::vector<StageEvent>& lastTimeline() const { return last_timeline_.events(); }
  // The online tuner of the state's steps (off until a step asks for it), and the windows, grouping and
  // fragment the last step begun runs with. Not while begin() runs.
  const OnlineTuner& tuner() const { return tuner_; }
  EngineSetting lastSetting() const { return last_setting_; }

 private:
  // A step's time not measured: none ended yet, or the last one was dropped.
  static constexpr uint64_t kNoSample = UINT64_MAX;

  // What the ranks measured of the last step, agreed.
  struct LastStep {
    uint64_t slowest_ns = kNoSample;  // the slowest rank's time, or kNoSample where any rank has none
    uint64_t ring_block_bytes = 0;    // the largest block a ring transfer of any rank moved
  };
  Result<LastStep> agree(const StepConfig& config);
  // Starts or feeds the tuner, and applies its setting to what `config` leaves to it.
  void tune(StepConfig& config, const LastStep& last);
  // The largest fragment every team's staging holds.
  size_t stagedFragmentBytes() const;

  const shard::ShardPlan& plan_;
  const int rank_;
  const std::vector<void*>& pointers_;
  std::vector<Team> teams_;
  PackPool pool_;
  std::vector<uint64_t> agreement_;  // all-gather buffer of begin()
  uint64_t next_step_ = 0;
  std::unique_ptr<Step> step_;
  StepTimeline last_timeline_{0, 0};
  GradNorm last_norm_;  // the last one a step computed, for a deferred policy
  Logger log_;
  OnlineTuner tuner_;
  bool tuner_started_ = false;
  EngineSetting last_setting_;
  std::chrono::steady_clock::time_point step_began_;
  uint64_t last_step_ns_ = kNoSample;
};

}  // namespace psdp::engine
