// The one wait loop of every collective: advance the algorithm's state machine as far as completions allow,
// and sleep on the transport's event counter only when nothing moved.
#pragma once

#include <string>

#include "base/status.h"
#include "coll/op_context.h"

namespace psdp::coll {

enum class Progress { kBlocked, kAdvanced, kDone };

// One algorithm's state machine (a ring pass, the barrier), as a posted collective drives it: the caller
// owns the loop, so several can be stepped from one progress thread.
class Phase {
 public:
  virtual ~Phase() = default;
  // Posts what may be posted, consumes what has completed; never blocks.
  virtual Result<Progress> advance() = 0;
  // The peers and operations it is blocked on, for the timeout message.
  virtual std::string waitingFor() const = 0;
};

// Drives `algorithm` until its advance() reports kDone. The algorithm provides:
//   Result<Progress> advance();      post what may be posted, consume what has completed; never blocks
//   std::string waitingFor() const;  the peers and operations it is blocked on, for the timeout message
// Returns the first error of advance() (a failed completion: remote error) or of the transport, or timeout
// once op.deadline has passed. After an error, operations may still be posted; see Collectives.
template <typename Algorithm>
Status runToCompletion(const OpContext& op, Algorithm& algorithm) {
  while (true) {
    // Read the counter before checking, so that a completion landing after the check still wakes us.
    uint32_t seen = op.transport->eventCount();
    PSDP_ASSIGN_OR_RETURN(Progress progress, algorithm.advance());
    if (progress == Progress::kDone) return Status::ok();
    if (progress == Progress::kAdvanced) continue;
    // A busy transport can keep waitEvents returning early; the deadline must still hold.
    Status waited =
        op.deadline.expired() ? Status::timeout("deadline passed") : op.transport->waitEvents(seen, op.deadline);
    if (waited.code() == PSDP_ERR_TIMEOUT) {
      return Status::timeout("{} timed out waiting for {}", op.describe(), algorithm.waitingFor());
    }
    PSDP_RETURN_IF_ERROR(waited);
  }
}

}  // namespace psdp::coll
