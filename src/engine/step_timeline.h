// What the chunks of a step went through and when: for each chunk, each stage's start and end, so that a
// user sees the pipeline and where it stalls. A collective stage runs from when its collective started (its
// first message could leave) to when it completed, as the context's driver saw them; the update runs from
// when the chunk was handed out to when the framework marked it updated. A transfer's collectives (a group
// of chunks, or a whole space in bulk mode) give each of its chunks the same times.
//
// The state engine keeps the timeline of its last step (psdp_state_step_events). While PSDP_TRACE_FILE
// traces, every stage is also a slice of the trace (base/trace.h), on one track per stage kind.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/chunk_schedule.h"

namespace psdp::engine {

// The public psdp_step_stage_t, in its order.
enum class TimelineStage : uint8_t {
  kReduceInGroup,
  kReduceAcrossReplicas,
  kUpdate,
  kGatherAcrossReplicas,
  kGatherInGroup,
};
inline constexpr int kTimelineStages = 5;

TimelineStage timelineStageOf(Stage stage);
const char* timelineStageName(TimelineStage stage);  // "reduce in group", ..., "update", ...

struct StageEvent {
  uint32_t chunk = 0;
  TimelineStage stage = TimelineStage::kReduceInGroup;
  uint64_t begin_ns = 0;  // steady clock (base/trace.h): CLOCK_MONOTONIC, shared by the processes of a host
  uint64_t end_ns = 0;
};

class StepTimeline {
 public:
  // chunks: of the plan; room for every stage of every chunk is made here, not per event.
  StepTimeline(uint64_t step, size_t chunks);

  void record(uint32_t chunk, TimelineStage stage, uint64_t begin_ns, uint64_t end_ns);
  // Events in the order they ended.
  const std::vector<StageEvent>& events() const { return events_; }

 private:
  uint64_t step_;
  std::vector<StageEvent> events_;
};

}  // namespace psdp::engine
