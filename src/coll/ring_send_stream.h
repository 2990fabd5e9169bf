// The sends of one ring phase: to the right neighbour, in schedule order (the receiver matches them in
// posting order), with at most op.depth() in flight so that completions are reused, never allocated.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "coll/op_context.h"
#include "coll/ring_schedule.h"

namespace psdp::coll {

class RingSendStream {
 public:
  RingSendStream(const OpContext& op, const RingCursor& cursor, size_t elem_size)
      : op_(op), next_(cursor), elem_size_(elem_size) {}

  // The next send to post.
  const RingCursor& next() const { return next_; }

  // Whether next() may take its completion now. An error of the send that used it last is returned
  // rather than overwritten.
  Result<bool> slotFree() const;
  // Posts next() from `data` (next().count() elements) and moves on. REQUIRES: !next().done(), slotFree().
  Status post(const std::byte* data);
  // Whether every posted send has completed; the first failed one is returned as soon as it is seen.
  Result<bool> settled() const;

  // The in-flight window is [windowBegin(), next().index()).
  uint64_t windowBegin() const { return next_.index() > depth() ? next_.index() - depth() : 0; }

 private:
  uint64_t depth() const { return static_cast<uint64_t>(op_.depth()); }

  const OpContext& op_;
  RingCursor next_;
  size_t elem_size_;
};

}  // namespace psdp::coll
