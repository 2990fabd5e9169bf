#include "coll/collectives.h"

namespace psdp::coll {

Status Collectives::run(Result<std::unique_ptr<CollTask>> posted, const Deadline& deadline) {
  PSDP_RETURN_IF_ERROR(posted.status());
  CollTask& task = *posted.value();
  task.start(deadline);
  while (true) {
    // Read the counter before advancing, so that a completion landing after the check still wakes us.
    uint32_t seen = transport_.eventCount();
    PSDP_ASSIGN_OR_RETURN(Progress progress, task.advance());
    if (progress == Progress::kDone) return Status::ok();
    if (progress == Progress::kAdvanced || progress == Progress::kYielded) continue;
    // A lost peer fails the operation even when it waits only on healthy ones; a failure recorded before
    // `seen` was read would not wake the wait. A busy transport can keep waitEvents returning early; the
    // deadline must still hold.
    Status waited = transport_.failure();
    if (waited.isOk()) {
      waited = deadline.expired() ? Status::timeout("deadline passed") : transport_.waitEvents(seen, deadline);
    }
    if (waited.code() == PSDP_ERR_TIMEOUT) {
      waited = Status::timeout("{} timed out waiting for {}", task.describe(), task.waitingFor());
    }
    if (!waited.isOk()) {
      task.abandon(waited);
      return waited;
    }
  }
}

}  // namespace psdp::coll
