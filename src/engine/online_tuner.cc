#include "engine/online_tuner.h"

#include <algorithm>
#include <utility>

namespace psdp::engine {
namespace {

constexpr size_t kWindows[] = {1, 2, 4, 8};
constexpr size_t kGroupings[] = {1, 2, 4, 8, 16};
constexpr size_t KiB = 1024;
constexpr size_t kFragments[] = {128 * KiB, 256 * KiB, 512 * KiB, 1024 * KiB, 2048 * KiB, 4096 * KiB};

}  // namespace

void OnlineTuner::start(EngineSetting start, const TuningScope& scope) {
  *this = OnlineTuner();
  best_ = start;
  scope_ = scope;
  if (!scope.window && !scope.grouping && !scope.fragment) {
    phase_ = TuningPhase::kFrozen;
    return;
  }
  phase_ = TuningPhase::kExploring;
  beginPass();
}

EngineSetting OnlineTuner::next() const {
  return phase_ == TuningPhase::kExploring ? queue_.front() : best_;
}

// Queues the settings of pass_ around the best so far, the start first while it is unmeasured (so the
// first pass always measures it, whatever it tries besides); a pass with nothing to try gives way to the
// next, and after the last the choice is made.
void OnlineTuner::beginPass() {
  for (;;) {
    queue_.clear();
    if (best_seconds_ == 0) queue_.push_back(best_);
    switch (pass_) {
      case Pass::kWindows:
      case Pass::kWindowsAgain: queueWindows(); break;
      case Pass::kGroupings: queueGroupings(); break;
      case Pass::kFragments: queueFragments(); break;
    }
    if (!queue_.empty()) return;
    if (!nextPass()) return freeze();
  }
}

bool OnlineTuner::nextPass() {
  switch (pass_) {
    case Pass::kWindows: pass_ = Pass::kGroupings; return true;
    case Pass::kGroupings:
      // The windows again only where another grouping won: at the starting one they are measured already.
      pass_ = scope_.window && best_.grouping != windows_at_grouping_ ? Pass::kWindowsAgain : Pass::kFragments;
      return true;
    case Pass::kWindowsAgain: pass_ = Pass::kFragments; return true;
    case Pass::kFragments: return false;
  }
  return false;
}

void OnlineTuner::queueWindows() {
  if (!scope_.window) return;
  windows_at_grouping_ = best_.grouping;
  for (size_t w : kWindows) {
    if (w != best_.window) queue_.push_back({w, best_.grouping, best_.fragment_bytes});
  }
}

void OnlineTuner::queueGroupings() {
  if (!scope_.grouping) return;
  for (size_t g : kGroupings) {
    const bool fits = g == 1 || (g <= scope_.chunks && scope_.chunk_bytes <= kMaxTransferBytes / g);
    if (g != best_.grouping && fits) queue_.push_back({best_.window, g, best_.fragment_bytes});
  }
}

void OnlineTuner::queueFragments() {
  if (!scope_.fragment) return;
  for (size_t f : kFragments) {
    if (f != best_.fragment_bytes && f <= scope_.largest_fragment_bytes && f < best_ring_block_) {
      queue_.push_back({best_.window, best_.grouping, f});
    }
  }
}

void OnlineTuner::record(double seconds, size_t ring_block_bytes) {
  if (phase_ != TuningPhase::kExploring || !(seconds > 0)) return;
  ++steps_;
  if (!warmed_up_) {
    warmed_up_ = true;
    return;
  }
  fastest_ = samples_ == 0 ? seconds : std::min(fastest_, seconds);
  ring_block_ = samples_ == 0 ? ring_block_bytes : std::max(ring_block_, ring_block_bytes);
  if (++samples_ < kSamples) return;
  advance();
}

// The setting at the front of the queue has its samples: it becomes the best if it is the first measured
// (the start) or clearly faster than the best; then the next setting, pass, or the end.
void OnlineTuner::advance() {
  const EngineSetting measured = queue_.front();
  const bool first = best_seconds_ == 0;
  if (first || fastest_ * kMinGain <= best_seconds_) {
    best_ = measured;
    best_seconds_ = fastest_;
    best_ring_block_ = ring_block_;
    if (first) start_seconds_ = fastest_;
  }
  queue_.erase(queue_.begin());
  samples_ = 0;
  if (!queue_.empty()) return;
  if (!nextPass()) return freeze();
  beginPass();
}

void OnlineTuner::freeze() {
  phase_ = TuningPhase::kFrozen;
  frozen_news_ = true;
}

bool OnlineTuner::takeFrozenNews() {
  return std::exchange(frozen_news_, false);
}

}  // namespace psdp::engine
