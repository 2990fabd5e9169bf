#include "engine/step_timeline.h"

#include <fmt/format.h>

#include "base/trace.h"

namespace psdp::engine {
namespace {

// Trace tracks of the stages, above those of teams (team ids, below 2^32 / 4).
constexpr uint32_t kTraceTrackBase = 0xC0000000u;

uint32_t traceTrack(TimelineStage stage) {
  const uint32_t track = kTraceTrackBase + static_cast<uint32_t>(stage);
  static const bool named = [] {
    for (int s = 0; s < kTimelineStages; ++s) {
      trace::nameTrack(kTraceTrackBase + static_cast<uint32_t>(s),
                       fmt::format("step: {}", timelineStageName(static_cast<TimelineStage>(s))));
    }
    return true;
  }();
  (void)named;
  return track;
}

}  // namespace

TimelineStage timelineStageOf(Stage stage) {
  switch (stage) {
    case Stage::kReduceInGroup: return TimelineStage::kReduceInGroup;
    case Stage::kReduceAcrossReplicas: return TimelineStage::kReduceAcrossReplicas;
    case Stage::kGatherAcrossReplicas: return TimelineStage::kGatherAcrossReplicas;
    case Stage::kGatherInGroup: return TimelineStage::kGatherInGroup;
  }
  return TimelineStage::kReduceInGroup;
}

const char* timelineStageName(TimelineStage stage) {
  switch (stage) {
    case TimelineStage::kReduceInGroup: return "reduce in group";
    case TimelineStage::kReduceAcrossReplicas: return "reduce across replicas";
    case TimelineStage::kUpdate: return "update";
    case TimelineStage::kGatherAcrossReplicas: return "gather across replicas";
    case TimelineStage::kGatherInGroup: return "gather in group";
  }
  return "?";
}

StepTimeline::StepTimeline(uint64_t step, size_t chunks) : step_(step) {
  events_.reserve(chunks * kTimelineStages);
}

void StepTimeline::record(uint32_t chunk, TimelineStage stage, uint64_t begin_ns, uint64_t end_ns) {
  events_.push_back(StageEvent{chunk, stage, begin_ns, end_ns});
  if (trace::on()) trace::slice(traceTrack(stage), fmt::format("step {} chunk {}", step_, chunk), begin_ns, end_ns);
}

}  // namespace psdp::engine
