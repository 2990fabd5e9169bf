// What a psdp_state_h and a psdp_step_h point to, and their live-handle checks: a deregistered state or an
// ended step is refused (invalid usage), never dereferenced.
#pragma once

#include <psdp/psdp.h>

#include <memory>
#include <vector>

#include "base/status.h"
#include "core/state_registration.h"

struct psdp_step;

struct psdp_state {
  std::unique_ptr<psdp::core::RegisteredState> impl;
  psdp_step* step = nullptr;  // the step begun and not ended
};

// The engine's step of a state, with this rank's owned ranges of each chunk in the C layout (what
// psdp_step_next_chunk hands out).
struct psdp_step {
  psdp_state* state = nullptr;
  psdp::engine::Step* impl = nullptr;
  std::vector<std::vector<psdp_owned_range_t>> ranges;
};

namespace psdp::api {

// OK for a live state; invalid argument for NULL, invalid usage for a deregistered or foreign one.
Status checkState(psdp_state_h state);
void registerState(psdp_state_h state);
bool unregisterState(psdp_state_h state);

Status checkStep(psdp_step_h step);
void registerStep(psdp_step_h step);
bool unregisterStep(psdp_step_h step);

}  // namespace psdp::api
