// The collective registration of one rank's training state (psdp_state_register): every rank passes the
// same buffer list (names, counts, dtypes, roles, memory kinds, in the same order: only pointers and
// device indices are its own) and the same plan configuration, and gets the same shard plan, made for the
// communicator's size and rank layout.
//
// The ranks compare what they registered through two all-gathers on the communicator: first a digest of
// the whole list and of the configuration, with each rank's verdict on its own input; then, only if the
// digests differ, one digest per buffer, so that the error can name the first buffer that differs and
// which ranks are on each side. Every rank takes the same branch from the same gathered data, so a
// mismatch is reported on every rank and nobody waits for a call that will not come; a rank whose own input
// is invalid still takes part, so that the others fail at once instead of at their timeout.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "core/communicator.h"
#include "core/state_teams.h"
#include "engine/state_engine.h"
#include "shard/shard_plan.h"
#include "tune/tuning_file.h"

namespace psdp::core {

// One rank's arguments: buffers and pointers in registration order. `config.world_size` and
// `config.rank_layout` are set by registerState from the communicator.
struct StateInput {
  std::vector<shard::BufferDesc> buffers;
  std::vector<void*> pointers;
  shard::PlanConfig config;
};

class RegisteredState {
 public:
  RegisteredState(shard::ShardPlan plan, std::vector<void*> pointers, int rank)
      : plan_(std::move(plan)), pointers_(std::move(pointers)), rank_(rank) {}
  ~RegisteredState();

  const shard::ShardPlan& plan() const { return plan_; }
  const std::vector<shard::BufferDesc>& buffers() const { return plan_.buffers(); }
  // This rank's address of each registered buffer, in registration order.
  const std::vector<void*>& pointers() const { return pointers_; }
  int rank() const { return rank_; }

  // The chunk engine of its steps, over its own teams (made by registerState).
  engine::StateEngine& engine() { return *engine_; }
  // The tuning file's engine rule for this state's communicator and chunk size (core/tuning.h): the window
  // and grouping a step takes where its config leaves them unset. Null: none.
  const std::optional<tune::EngineRule>& tunedEngine() const { return tuned_engine_; }
  // Whether its communicator runs in deterministic mode (PSDP_DETERMINISTIC): online tuning then leaves the
  // grouping alone.
  bool deterministic() const { return deterministic_; }

 private:
  friend Result<std::unique_ptr<RegisteredState>> registerState(Communicator& comm, Result<StateInput> input);

  shard::ShardPlan plan_;
  std::vector<void*> pointers_;
  int rank_;
  std::optional<tune::EngineRule> tuned_engine_;
  bool deterministic_ = false;
  // Declared in creation order: the engine (and its step) goes before the teams it posts on.
  StateTeams teams_;
  std::unique_ptr<engine::StateEngine> engine_;
};

// Collective over `comm`. `input` is this rank's arguments, or why the C boundary could not read them: such a
// rank still takes part, and fails with its own error. Errors: invalid argument (this rank's input,
// naming the field and buffer; a NULL pointer for a buffer with elements; an optimizer-state buffer whose
// count is not what the plan gives this rank; or another rank's, naming that rank), mismatch (ranks
// registered different lists or configurations: names the first differing buffer and the ranks on each
// side), and the communicator's errors (timeout, remote).
Result<std::unique_ptr<RegisteredState>> registerState(Communicator& comm, Result<StateInput> input);

}  // namespace psdp::core
