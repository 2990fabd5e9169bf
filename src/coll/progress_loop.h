// The state machine every collective algorithm is: advanced as far as completions allow by whoever drives
// it (core/coll_engine), which sleeps on the transport's event counter only when nothing moved.
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

}  // namespace psdp::coll
