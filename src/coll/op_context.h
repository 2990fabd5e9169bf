// What one running collective needs from its communicator: the transport, the tag, the deadline, the
// completions and agreement messages of its task slot and its staging slots (all owned by Collectives, so
// that they outlive any operation a failed collective leaves posted), and a label for messages.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/deadline.h"
#include "coll/op_header.h"
#include "coll/op_header_check.h"
#include "coll/staging_arena.h"
#include "transport/transport.h"

namespace psdp::coll {

// Completions reused round-robin by stream index: the operation at index i owns at(i) until it is done,
// and the algorithm posts i + size() only after that.
class CompletionRing {
 public:
  explicit CompletionRing(int size) : size_(static_cast<uint64_t>(size)), slots_(new transport::Completion[size]) {}

  transport::Completion& at(uint64_t index) { return slots_[index % size_]; }
  int size() const { return static_cast<int>(size_); }

 private:
  uint64_t size_;
  std::unique_ptr<transport::Completion[]> slots_;
};

// Counts the completions of `ring` from *done up to `posted` in posting order, stopping at the first one not
// yet complete; returns whether it counted any, or the status of the first that failed.
Result<bool> settleInOrder(CompletionRing& ring, uint64_t posted, uint64_t* done);

struct OpContext {
  transport::Transport* transport = nullptr;
  int rank = 0;
  int nranks = 1;
  transport::Tag tag = 0;
  Deadline deadline = Deadline::never();
  // depth() in-flight sends and receives at most; the ring keeps as many fragments of a block per round.
  // The rings hold at least that many completions (the table's largest depth).
  CompletionRing* sends = nullptr;
  CompletionRing* recvs = nullptr;
  int ring_depth = 1;  // the operation's rule's (coll/algorithm_table.h)
  // The ring's: [0, depth) take arriving fragments, [depth, 2*depth) hold partial sums being forwarded.
  // Claimed from the communicator's arena when the stage that needs them starts; none before.
  StagingSlots staging;
  AgreementChannel* agreement = nullptr;

  // What this rank called, as the agreement compares it and messages name it.
  OpHeader header;

  int depth() const { return ring_depth; }
  int leftPeer() const { return (rank + nranks - 1) % nranks; }
  int rightPeer() const { return (rank + 1) % nranks; }
  // "all-reduce #12 (count 1000, float32, sum)".
  std::string describe() const { return header.describe(); }
};

// The incomplete operations among receives [recv_begin, recv_end) from the left peer and sends
// [send_begin, send_end) to the right peer of a ring phase, for timeout messages:
// "peer 3 (2 receives) and peer 5 (1 send) in the reduce-scatter phase".
std::string describeRingWait(const OpContext& op, const char* phase, uint64_t recv_begin, uint64_t recv_end,
                             uint64_t send_begin, uint64_t send_end);

}  // namespace psdp::coll
