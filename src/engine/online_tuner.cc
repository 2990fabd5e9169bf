#include "engine/online_tuner.h"

#include <algorithm>
#include <utility>

namespace psdp::engine {
namespace {

constexpr size_t kWindows[] = {1, 2, 4, 8};
constexpr size_t kGroupings[] = {1, 2, 4, 8, 16};

}  // namespace

void OnlineTuner::start(EngineSetting start, bool tune_window, bool tune_grouping, size_t chunk_bytes, size_t chunks) {
  *this = OnlineTuner();
  best_ = start;
  tune_window_ = tune_window;
  if (!tune_window && !tune_grouping) {
    phase_ = TuningPhase::kFrozen;
    return;
  }
  tune_grouping_ = tune_grouping;
  chunk_bytes_ = chunk_bytes;
  chunks_ = chunks;
  phase_ = TuningPhase::kExploring;
  if (tune_window) {
    beginWindows();
  } else {
    pass_ = 1;
    beginGroupings();
  }
}

EngineSetting OnlineTuner::next() const {
  return phase_ == TuningPhase::kExploring ? queue_.front() : best_;
}

void OnlineTuner::beginWindows() {
  windows_at_grouping_ = best_.grouping;
  queue_.clear();
  if (best_seconds_ == 0) queue_.push_back(best_);  // the start, not measured yet
  for (size_t w : kWindows) {
    if (w != best_.window) queue_.push_back({w, best_.grouping});
  }
}

void OnlineTuner::beginGroupings() {
  queue_.clear();
  if (best_seconds_ == 0) queue_.push_back(best_);  // the start, not measured yet
  if (tune_grouping_) {
    for (size_t g : kGroupings) {
      const bool fits = g == 1 || (g <= chunks_ && chunk_bytes_ <= kMaxTransferBytes / g);
      if (g != best_.grouping && fits) queue_.push_back({best_.window, g});
    }
  }
  if (queue_.empty()) {
    phase_ = TuningPhase::kFrozen;
    frozen_news_ = true;
  }
}

void OnlineTuner::record(double seconds) {
  if (phase_ != TuningPhase::kExploring || !(seconds > 0)) return;
  ++steps_;
  if (!warmed_up_) {
    warmed_up_ = true;
    return;
  }
  fastest_ = samples_ == 0 ? seconds : std::min(fastest_, seconds);
  if (++samples_ < kSamples) return;
  advance();
}

// The setting at the front of the queue has its samples: it becomes the best if it is the first measured
// (the start) or clearly faster than the best; then the next setting, dimension, or the end.
void OnlineTuner::advance() {
  const EngineSetting measured = queue_.front();
  if (best_seconds_ == 0) {
    best_ = measured;
    best_seconds_ = start_seconds_ = fastest_;
  } else if (fastest_ * kMinGain <= best_seconds_) {
    best_ = measured;
    best_seconds_ = fastest_;
  }
  queue_.erase(queue_.begin());
  samples_ = 0;
  if (!queue_.empty()) return;
  ++pass_;
  if (pass_ == 1) {
    beginGroupings();
  } else if (pass_ == 2 && tune_window_ && best_.grouping != windows_at_grouping_) {
    beginWindows();  // the windows again, at the grouping that won
  } else {
    phase_ = TuningPhase::kFrozen;
    frozen_news_ = true;
  }
}

bool OnlineTuner::takeFrozenNews() {
  return std::exchange(frozen_news_, false);
}

}  // namespace psdp::engine
