#include "coll/ring_schedule.h"

namespace psdp::coll {

RingCursor::RingCursor(const BlockLayout& layout, const RingShape& shape, int shift)
    : layout_(layout),
      shape_(shape),
      shift_(shift),
      steps_(shape.nranks - 1),
      round_elems_(shape.frag_elems * static_cast<size_t>(shape.frags_per_round)) {
  // A single rank has no steps; an empty buffer has no rounds.
  rounds_ = steps_ == 0 ? 0 : (layout_.maxSize() + round_elems_ - 1) / round_elems_;
  if (done()) return;
  enterStep();
  skipEmpty();
}

uint64_t RingCursor::position() const {
  uint64_t step_index = static_cast<uint64_t>(round_) * static_cast<uint64_t>(steps_) + static_cast<uint64_t>(step_);
  return step_index * static_cast<uint64_t>(shape_.frags_per_round) + static_cast<uint64_t>(frag_);
}

void RingCursor::advance() {
  ++index_;
  if (++frag_ == shape_.frags_per_round) {
    nextStep();
  }
  skipEmpty();
}

void RingCursor::enterStep() {
  int n = shape_.nranks;
  // C++'s % keeps the dividend's sign; rank - step - shift >= -n for the shifts the algorithms use.
  block_ = ((shape_.rank - step_ - shift_) % n + 2 * n) % n;
  block_size_ = layout_.size(block_);
}

void RingCursor::nextStep() {
  frag_ = 0;
  if (++step_ == steps_) {
    step_ = 0;
    ++round_;
  }
  if (!done()) enterStep();
}

// A fragment that starts past the end of its block means the rest of this step is empty too.
void RingCursor::skipEmpty() {
  while (!done() && fragStart() >= block_size_) nextStep();
}

}  // namespace psdp::coll
