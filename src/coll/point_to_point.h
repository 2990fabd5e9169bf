// psdp_send and psdp_recv as tasks of a team's queue: one message straight between the two callers' buffers,
// no staging, no header agreement (the other ranks take no part), and a tag of its own per ordered pair of
// ranks (coll/tag.h, makePointToPointTag), so the n-th send from rank a to rank b matches b's n-th receive
// from a whatever else either posts in between. A receive whose buffer is not the size of the message fails
// with a mismatch (the transport compares them), and fails the team as any other error does.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "coll/collectives.h"
#include "coll/op_context.h"

namespace psdp::coll {

// Completions for the point-to-point transfers of one Collectives: a fixed set made at creation, each lent to
// one task from its start until it is destroyed. A completion whose transfer has not completed when its task
// goes (a failure) is never lent again: the transport may still write it until it is closed, and the
// Collectives, failed by then, outlives that. Thread-safe.
class CompletionPool {
 public:
  explicit CompletionPool(size_t size);
  // Null when every completion is lent.
  transport::Completion* take();
  void give(transport::Completion* completion);

 private:
  std::unique_ptr<transport::Completion[]> completions_;
  std::mutex mutex_;
  std::vector<transport::Completion*> free_;  // GUARDED_BY(mutex_)
};

// What a point-to-point task needs of the Collectives that made it.
class PointToPointOwner {
 public:
  virtual ~PointToPointOwner() = default;
  // Records the first failure; later calls return it.
  virtual void fail(const OpContext& op, const Status& status) = 0;
  virtual CompletionPool& completions() = 0;
};

struct PointToPointArgs {
  bool send = true;
  int peer = 0;
  std::byte* data = nullptr;  // read only for a send
  size_t bytes = 0;
};

// `op` carries the transport, the tag (makePointToPointTag), this rank and the header that names the call
// (kind kSend or kRecv, root = the peer). The task starts once a completion is free and completes when its
// transfer does. REQUIRES: the owner outlives the task.
std::unique_ptr<CollTask> makePointToPointTask(PointToPointOwner& owner, const OpContext& op,
                                               const PointToPointArgs& args);

// Tasks made at once without allocating.
void primePointToPointTasks(size_t n);

}  // namespace psdp::coll
