// The C boundary for registered state: argument translation, the live-handle check, and the call into
// core's collective registration.
#include <memory>
#include <vector>

#include "api/guard.h"
#include "api/handle.h"
#include "api/live_handles.h"
#include "api/plan_args.h"
#include "api/state_handle.h"
#include "api/validate.h"
#include "core/state_registration.h"

using psdp::Result;
using psdp::Status;
using psdp::api::checkHandle;
using psdp::api::checkOut;
using psdp::api::guarded;
namespace core = psdp::core;
namespace shard = psdp::shard;

using psdp::api::checkState;

namespace psdp::api {

using LiveStates = LiveHandles<psdp_state_h>;
using LiveSteps = LiveHandles<psdp_step_h>;

Status checkState(psdp_state_h state) {
  if (state == nullptr) return Status::invalidArgument("state is NULL");
  if (!LiveStates::instance().contains(state)) {
    return Status::invalidUsage("state is not a live registration (deregistered, or not made by psdp_state_register)");
  }
  return Status::ok();
}
void registerState(psdp_state_h state) {
  LiveStates::instance().add(state);
}
bool unregisterState(psdp_state_h state) {
  return LiveStates::instance().remove(state);
}

Status checkStep(psdp_step_h step) {
  if (step == nullptr) return Status::invalidArgument("step is NULL");
  if (!LiveSteps::instance().contains(step)) {
    return Status::invalidUsage(
        "step is not a live step (ended, its state deregistered, or not made by psdp_step_begin)");
  }
  return Status::ok();
}
void registerStep(psdp_step_h step) {
  LiveSteps::instance().add(step);
}
bool unregisterStep(psdp_step_h step) {
  return LiveSteps::instance().remove(step);
}

}  // namespace psdp::api

namespace {

// Everything this rank's arguments say, or why they cannot be read.
Result<core::StateInput> translateInput(const psdp_buffer_desc_t* buffers, int nbuffers,
                                        const psdp_plan_config_t* config, psdp_state_h* state_p, int world_size) {
  PSDP_RETURN_IF_ERROR(checkOut(state_p, "state_p"));
  core::StateInput input;
  PSDP_ASSIGN_OR_RETURN(input.buffers, psdp::api::translateBuffers(buffers, nbuffers));
  PSDP_ASSIGN_OR_RETURN(input.config, psdp::api::translatePlanConfig(config, world_size, nullptr));
  for (int i = 0; i < nbuffers; ++i) input.pointers.push_back(buffers[i].ptr);
  return input;
}

}  // namespace

extern "C" {

PSDP_API psdp_status_t psdp_state_register(psdp_comm_h comm, const psdp_buffer_desc_t* buffers, int nbuffers,
                                           const psdp_plan_config_t* config, psdp_state_h* state_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    // A rank with unreadable arguments still takes part, so that the others fail at once.
    Result<core::StateInput> input = translateInput(buffers, nbuffers, config, state_p, comm->impl->size());
    PSDP_ASSIGN_OR_RETURN(std::unique_ptr<core::RegisteredState> registered,
                          core::registerState(*comm->impl, std::move(input)));
    auto handle = std::make_unique<psdp_state>();
    handle->impl = std::move(registered);
    psdp::api::registerState(handle.get());
    *state_p = handle.release();
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_state_deregister(psdp_state_h state) {
  return guarded(nullptr, [&] {
    if (state == nullptr) return Status::invalidArgument("state is NULL");
    if (!psdp::api::unregisterState(state)) {
      return Status::invalidUsage("state is not a live registration (deregistered already?)");
    }
    // A step still running is abandoned: its handle dies with the state (its collectives fail its teams).
    if (state->step != nullptr) {
      psdp::api::unregisterStep(state->step);
      delete state->step;
    }
    delete state;
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_state_get_plan(psdp_state_h state, psdp_plan_h* plan_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkState(state));
    PSDP_RETURN_IF_ERROR(checkOut(plan_p, "plan_p"));
    *plan_p = psdp::api::adoptPlan(state->impl->plan());
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_state_buffer_count(psdp_state_h state, int* count_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkState(state));
    PSDP_RETURN_IF_ERROR(checkOut(count_p, "count_p"));
    *count_p = static_cast<int>(state->impl->buffers().size());
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_state_get_buffer(psdp_state_h state, int index, psdp_buffer_desc_t* buffer_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkState(state));
    PSDP_RETURN_IF_ERROR(checkOut(buffer_p, "buffer_p"));
    const auto& buffers = state->impl->buffers();
    if (index < 0 || static_cast<size_t>(index) >= buffers.size()) {
      return Status::invalidArgument("index {} is outside [0, {})", index, buffers.size());
    }
    const shard::BufferDesc& b = buffers[static_cast<size_t>(index)];
    *buffer_p = psdp_buffer_desc_t{b.name.c_str(),
                                   state->impl->pointers()[static_cast<size_t>(index)],
                                   b.count,
                                   b.dtype,
                                   static_cast<psdp_buffer_role_t>(static_cast<int>(b.role)),
                                   static_cast<psdp_memory_kind_t>(static_cast<int>(b.memory)),
                                   b.device};
    return Status::ok();
  });
}

}  // extern "C"
