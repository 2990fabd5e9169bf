// The C boundary for steps: argument translation, the live-handle checks, and the state's chunk engine.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>

#include "api/guard.h"
#include "api/state_handle.h"
#include "api/validate.h"

using psdp::Deadline;
using psdp::Result;
using psdp::Status;
using psdp::api::checkOut;
using psdp::api::checkState;
using psdp::api::checkStep;
using psdp::api::guarded;
namespace engine = psdp::engine;

namespace {

static_assert(static_cast<int>(engine::ChunkState::kAwaitingGradients) == PSDP_CHUNK_AWAITING_GRADS &&
                  static_cast<int>(engine::ChunkState::kGradientsReady) == PSDP_CHUNK_GRADS_READY &&
                  static_cast<int>(engine::ChunkState::kReducing) == PSDP_CHUNK_REDUCING &&
                  static_cast<int>(engine::ChunkState::kReduced) == PSDP_CHUNK_REDUCED &&
                  static_cast<int>(engine::ChunkState::kUpdated) == PSDP_CHUNK_UPDATED &&
                  static_cast<int>(engine::ChunkState::kGathering) == PSDP_CHUNK_GATHERING &&
                  static_cast<int>(engine::ChunkState::kGathered) == PSDP_CHUNK_GATHERED,
              "psdp_chunk_state_t mirrors engine::ChunkState");
static_assert(static_cast<int>(engine::TimelineStage::kReduceInGroup) == PSDP_STAGE_REDUCE_IN_GROUP &&
                  static_cast<int>(engine::TimelineStage::kReduceAcrossReplicas) == PSDP_STAGE_REDUCE_ACROSS_REPLICAS &&
                  static_cast<int>(engine::TimelineStage::kUpdate) == PSDP_STAGE_UPDATE &&
                  static_cast<int>(engine::TimelineStage::kGatherAcrossReplicas) == PSDP_STAGE_GATHER_ACROSS_REPLICAS &&
                  static_cast<int>(engine::TimelineStage::kGatherInGroup) == PSDP_STAGE_GATHER_IN_GROUP,
              "psdp_step_stage_t mirrors engine::TimelineStage");

Result<bool> orderIsForward(int order, const char* field, bool default_forward) {
  switch (order) {
    case PSDP_STEP_ORDER_DEFAULT: return default_forward;
    case PSDP_STEP_ORDER_FORWARD: return true;
    case PSDP_STEP_ORDER_BACKWARD: return false;
    default: return Status::invalidArgument("config: {} {} is not a psdp_step_order_t", field, order);
  }
}

// `tuned`: the tuning file's engine rule for the state (null: none), which fills the windows, the grouping
// and the fragment the caller leaves unset; online tuning then starts from them. `deterministic`: the state's
// communicator's mode, in which online tuning leaves the grouping alone.
Result<engine::StepConfig> translateStepConfig(const psdp_step_config_t* user, const psdp::tune::EngineRule* tuned,
                                               bool deterministic) {
  psdp_step_config_t c = PSDP_STEP_CONFIG_INITIALIZER;
  if (user != nullptr) {
    if (user->magic != PSDP_STEP_CONFIG_MAGIC) {
      return Status::invalidArgument(
          "config: magic is {:#x}, not PSDP_STEP_CONFIG_MAGIC: initialise it with PSDP_STEP_CONFIG_INITIALIZER",
          user->magic);
    }
    if (user->size < offsetof(psdp_step_config_t, reduce_window)) {
      return Status::invalidArgument("config: size {} is too small for a psdp_step_config_t", user->size);
    }
    std::memcpy(&c, user, std::min(user->size, sizeof(c)));
  }
  if (c.online_tuning != 0 && c.online_tuning != 1) {
    return Status::invalidArgument("config: online_tuning {} is neither 0 nor 1", c.online_tuning);
  }
  engine::StepConfig out;
  out.online_tuning = c.online_tuning == 1;
  // Bulk mode has one transfer per space: nothing for windows or grouping to change.
  out.tune_window = out.online_tuning && c.reduce_window == 0 && c.gather_window == 0 && c.mode == PSDP_STEP_PIPELINED;
  out.tune_grouping =
      out.online_tuning && c.chunks_per_transfer == 0 && c.mode == PSDP_STEP_PIPELINED && !deterministic;
  // The ring's result does not depend on its fragments: tuned in deterministic mode and bulk steps too.
  out.tune_fragment = out.online_tuning && c.fragment_bytes == 0;
  if (tuned != nullptr && tuned->window > 0) {
    if (c.reduce_window == 0) c.reduce_window = static_cast<size_t>(tuned->window);
    if (c.gather_window == 0) c.gather_window = static_cast<size_t>(tuned->window);
  }
  if (tuned != nullptr && tuned->grouping > 0 && c.chunks_per_transfer == 0) {
    c.chunks_per_transfer = static_cast<size_t>(tuned->grouping);
  }
  if (tuned != nullptr && c.fragment_bytes == 0) c.fragment_bytes = tuned->fragment_bytes;
  out.fragment_bytes = c.fragment_bytes;
  out.reduce_window = c.reduce_window == 0 ? out.reduce_window : c.reduce_window;
  out.gather_window = c.gather_window == 0 ? out.gather_window : c.gather_window;
  PSDP_ASSIGN_OR_RETURN(out.reduce_forward, orderIsForward(c.reduce_order, "reduce_order", false));
  PSDP_ASSIGN_OR_RETURN(bool gather_forward, orderIsForward(c.gather_order, "gather_order", true));
  out.gather_backward = !gather_forward;
  if (c.op != PSDP_SUM && c.op != PSDP_AVG) {
    return Status::invalidArgument("config: op {} is neither PSDP_SUM nor PSDP_AVG", static_cast<int>(c.op));
  }
  out.op = c.op;
  if (c.unused_grads != PSDP_UNUSED_GRADS_ERROR && c.unused_grads != PSDP_UNUSED_GRADS_ZERO) {
    return Status::invalidArgument("config: unused_grads {} is not a psdp_unused_grads_t", c.unused_grads);
  }
  out.unused =
      c.unused_grads == PSDP_UNUSED_GRADS_ZERO ? engine::UnusedGradients::kZero : engine::UnusedGradients::kError;
  if (c.mode != PSDP_STEP_PIPELINED && c.mode != PSDP_STEP_BULK) {
    return Status::invalidArgument("config: mode {} is not a psdp_step_mode_t", c.mode);
  }
  out.chunks_per_transfer = c.mode == PSDP_STEP_BULK ? 0 : std::max<size_t>(1, c.chunks_per_transfer);
  switch (c.grad_norm) {
    case PSDP_GRAD_NORM_NONE: out.grad_norm = engine::GradNormPolicy::kNone; break;
    case PSDP_GRAD_NORM_GLOBAL: out.grad_norm = engine::GradNormPolicy::kGlobal; break;
    case PSDP_GRAD_NORM_DEFERRED: out.grad_norm = engine::GradNormPolicy::kDeferred; break;
    default: return Status::invalidArgument("config: grad_norm {} is not a psdp_grad_norm_policy_t", c.grad_norm);
  }
  switch (c.partial_sums) {
    case PSDP_PARTIALS_DEFAULT: out.partial_sums = engine::PartialSums::kDefault; break;
    case PSDP_PARTIALS_FLOAT32: out.partial_sums = engine::PartialSums::kFloat32; break;
    case PSDP_PARTIALS_GRADIENT_DTYPE: out.partial_sums = engine::PartialSums::kGradientDtype; break;
    default: return Status::invalidArgument("config: partial_sums {} is not a psdp_partial_sums_t", c.partial_sums);
  }
  if (c.stream != nullptr) return Status::unsupported("config: stream: steps on CUDA memory are not in this build");
  return out;
}

Deadline deadlineOf(double timeout_s) {
  return timeout_s <= 0 ? Deadline::after(0) : Deadline::after(timeout_s);
}

Status checkTimeout(double timeout_s) {
  if (!(timeout_s >= 0)) return Status::invalidArgument("timeout_s {} is negative or not a number", timeout_s);
  return Status::ok();
}

// Frees a step's handle (its engine step is gone or going with it).
void releaseStep(psdp_step_h step) {
  psdp::api::unregisterStep(step);
  step->state->step = nullptr;
  delete step;
}

}  // namespace

extern "C" {

PSDP_API psdp_status_t psdp_step_begin(psdp_state_h state, const psdp_step_config_t* config, psdp_step_h* step_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkState(state));
    PSDP_RETURN_IF_ERROR(checkOut(step_p, "step_p"));
    psdp::core::RegisteredState& registered = *state->impl;
    const std::optional<psdp::tune::EngineRule>& tuned = registered.tunedEngine();
    PSDP_ASSIGN_OR_RETURN(engine::StepConfig translated,
                          translateStepConfig(config, tuned ? &*tuned : nullptr, registered.deterministic()));
    auto handle = std::make_unique<psdp_step>();
    handle->state = state;
    const psdp::shard::ShardPlan& plan = registered.plan();
    for (size_t c = 0; c < plan.chunks().size(); ++c) {
      std::vector<psdp_owned_range_t>& ranges = handle->ranges.emplace_back();
      for (const psdp::shard::OwnedRange& r : plan.ownedRanges(registered.rank(), c)) {
        ranges.push_back(psdp_owned_range_t{r.buffer, static_cast<size_t>(r.offset), static_cast<size_t>(r.count)});
      }
    }
    PSDP_ASSIGN_OR_RETURN(handle->impl, registered.engine().begin(translated));
    state->step = handle.get();
    psdp::api::registerStep(handle.get());
    *step_p = handle.release();
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_step_grads_ready(psdp_step_h step, int buffer, size_t offset, size_t count) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkStep(step));
    if (buffer == PSDP_STEP_ALL_BUFFERS) return step->impl->allGradientsReady();
    return step->impl->gradientsReady(buffer, offset, count);
  });
}

PSDP_API psdp_status_t psdp_step_backward_done(psdp_step_h step) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkStep(step));
    return step->impl->backwardDone();
  });
}

PSDP_API psdp_status_t psdp_step_next_chunk(psdp_step_h step, double timeout_s, psdp_step_chunk_t* chunk_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkStep(step));
    PSDP_RETURN_IF_ERROR(checkOut(chunk_p, "chunk_p"));
    PSDP_RETURN_IF_ERROR(checkTimeout(timeout_s));
    PSDP_ASSIGN_OR_RETURN(std::optional<uint32_t> chunk, step->impl->nextChunk(deadlineOf(timeout_s)));
    psdp_step_chunk_t out = PSDP_STEP_CHUNK_INITIALIZER;
    out.remaining = step->impl->chunks() - step->impl->handedOut();
    if (chunk) {
      out.chunk = *chunk;
      out.ranges = step->ranges[*chunk].data();
      out.nranges = step->ranges[*chunk].size();
    }
    *chunk_p = out;
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_step_chunk_updated(psdp_step_h step, size_t chunk) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkStep(step));
    if (chunk >= step->impl->chunks()) {
      return Status::invalidArgument("chunk {} is not one of the step's {}", chunk, step->impl->chunks());
    }
    return step->impl->chunkUpdated(static_cast<uint32_t>(chunk));
  });
}

PSDP_API psdp_status_t psdp_step_wait_params(psdp_step_h step, int buffer, size_t offset, size_t count,
                                             double timeout_s) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkStep(step));
    PSDP_RETURN_IF_ERROR(checkTimeout(timeout_s));
    return step->impl->waitParameters(buffer, offset, count, deadlineOf(timeout_s));
  });
}

PSDP_API psdp_status_t psdp_step_end(psdp_step_h step) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkStep(step));
    psdp::engine::StateEngine& engine = step->state->impl->engine();
    Status ended = engine.end(Deadline::never());
    // A step that cannot end for the caller's reason (chunks not updated) stays; a failed one is dropped.
    if (!ended.isOk() && !step->impl->failed()) return ended;
    if (!ended.isOk()) engine.abandon();
    releaseStep(step);
    return ended;
  });
}

PSDP_API psdp_status_t psdp_step_grad_norm(psdp_step_h step, double timeout_s, psdp_grad_norm_t* norm_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkStep(step));
    PSDP_RETURN_IF_ERROR(checkOut(norm_p, "norm_p"));
    PSDP_RETURN_IF_ERROR(checkTimeout(timeout_s));
    PSDP_ASSIGN_OR_RETURN(engine::GradNorm norm, step->impl->gradNorm(deadlineOf(timeout_s)));
    *norm_p = psdp_grad_norm_t{norm.sq_norm, norm.nonfinite ? 1 : 0, norm.available ? 1 : 0, norm.step};
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_step_chunk_state(psdp_step_h step, size_t chunk, psdp_chunk_state_t* state_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkStep(step));
    PSDP_RETURN_IF_ERROR(checkOut(state_p, "state_p"));
    if (chunk >= step->impl->chunks()) {
      return Status::invalidArgument("chunk {} is not one of the step's {}", chunk, step->impl->chunks());
    }
    *state_p = static_cast<psdp_chunk_state_t>(static_cast<int>(step->impl->chunkState(static_cast<uint32_t>(chunk))));
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_state_step_events(psdp_state_h state, psdp_step_event_t* events, size_t capacity,
                                              size_t* count_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkState(state));
    PSDP_RETURN_IF_ERROR(checkOut(count_p, "count_p"));
    if (capacity > 0 && events == nullptr) return Status::invalidArgument("events is NULL with capacity {}", capacity);
    const std::vector<engine::StageEvent>& timeline = state->impl->engine().lastTimeline();
    for (size_t i = 0; i < std::min(capacity, timeline.size()); ++i) {
      const engine::StageEvent& e = timeline[i];
      events[i] = psdp_step_event_t{e.chunk, static_cast<psdp_step_stage_t>(e.stage), 0, e.begin_ns, e.end_ns};
    }
    *count_p = timeline.size();
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_state_engine_tuning(psdp_state_h state, psdp_engine_tuning_t* tuning_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkState(state));
    PSDP_RETURN_IF_ERROR(checkOut(tuning_p, "tuning_p"));
    const engine::OnlineTuner& tuner = state->impl->engine().tuner();
    const engine::EngineSetting setting = state->impl->engine().lastSetting();
    psdp_engine_tuning_t out{};
    switch (tuner.phase()) {
      case engine::TuningPhase::kOff: out.phase = PSDP_ENGINE_TUNING_OFF; break;
      case engine::TuningPhase::kExploring: out.phase = PSDP_ENGINE_TUNING_EXPLORING; break;
      case engine::TuningPhase::kFrozen: out.phase = PSDP_ENGINE_TUNING_FROZEN; break;
    }
    if (tuner.phase() != engine::TuningPhase::kOff) {
      out.window = setting.window;
      out.chunks_per_transfer = setting.grouping;
      out.fragment_bytes = setting.fragment_bytes;
    }
    out.steps = tuner.steps();
    out.step_s = tuner.bestSeconds();
    out.start_step_s = tuner.startSeconds();
    *tuning_p = out;
    return Status::ok();
  });
}

}  // extern "C"
