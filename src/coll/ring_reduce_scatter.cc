// Flow of one fragment: received into a staging slot, reduced with this rank's input into a second staging
// slot, sent from there to the right neighbour; at the last step it is reduced straight into the output.
//
// Why this cannot deadlock with a few slots and rendezvous sends (a send completes only once its receiver
// has posted the matching receive): a receive slot is freed by the reduce alone, never by a send; and the
// forward of a fragment is frags_per_round (G) positions behind it in the send stream (ring_schedule.h).
// With G = depth receive slots and depth send slots, every rank can always take what its left neighbour
// sends next, so the ring drains round by round. Keeping partial sums in the receive slots themselves
// would tie a receive slot to the right neighbour's progress and deadlock once a block spans more
// fragments than there are slots.
#include "coll/ring_reduce_scatter.h"

#include <memory>

#include <string>

#include "coll/progress_loop.h"
#include "coll/ring_send_stream.h"

namespace psdp::coll {
namespace {

// The send schedule starts one block left of this rank; the receive schedule, being the left neighbour's
// send schedule, one further.
constexpr int kSendShift = 1;
constexpr int kRecvShift = 2;

class RingReduceScatter final : public Phase {
 public:
  RingReduceScatter(const OpContext& op, const RingReduceScatterArgs& args)
      : op_(op),
        args_(args),
        shape_{op.rank, op.nranks, args.frag_elems, op.depth()},
        sends_(op, RingCursor(args.layout, shape_, kSendShift), args.elem_size),
        posted_(args.layout, shape_, kRecvShift),
        arrived_(posted_) {}

  Result<Progress> advance() override;
  std::string waitingFor() const override {
    return describeRingWait(op_, "reduce-scatter", arrived_.index(), posted_.index(), sends_.windowBegin(),
                            sends_.next().index());
  }

 private:
  Status postInputSends();
  Status reduceArrived();
  Status postRecvs();
  Result<bool> forwardReady() const;

  uint64_t depth() const { return static_cast<uint64_t>(op_.depth()); }
  std::byte* recvSlot(uint64_t index) const { return op_.staging.slot(static_cast<int>(index % depth())); }
  std::byte* sendSlot(uint64_t index) const { return op_.staging.slot(static_cast<int>(depth() + index % depth())); }

  const OpContext& op_;
  const RingReduceScatterArgs& args_;
  RingShape shape_;
  RingSendStream sends_;
  RingCursor posted_;   // the next receive to post
  RingCursor arrived_;  // the next received fragment to reduce
  bool moved_ = false;
};

Result<Progress> RingReduceScatter::advance() {
  moved_ = false;
  PSDP_RETURN_IF_ERROR(postInputSends());
  PSDP_RETURN_IF_ERROR(reduceArrived());
  PSDP_RETURN_IF_ERROR(postRecvs());
  PSDP_ASSIGN_OR_RETURN(bool sends_settled, sends_.settled());
  if (sends_.next().done() && arrived_.done() && sends_settled) return Progress::kDone;
  return moved_ ? Progress::kAdvanced : Progress::kBlocked;
}

// Step 0 sends this rank's own input; it needs nothing but a free completion. Premul-sum scales it first,
// into the send slot that goes with that completion (free along with it), since no combine will.
Status RingReduceScatter::postInputSends() {
  while (!sends_.next().done() && sends_.next().step() == 0) {
    PSDP_ASSIGN_OR_RETURN(bool free, sends_.slotFree());
    if (!free) break;
    const std::byte* data = args_.input + sends_.next().bufferOffset() * args_.elem_size;
    if (args_.kernel.scalesInput()) {
      std::byte* scaled = sendSlot(sends_.next().index());
      args_.kernel.scaleInput(scaled, data, sends_.next().count());
      data = scaled;
    }
    PSDP_RETURN_IF_ERROR(sends_.post(data));
    moved_ = true;
  }
  return Status::ok();
}

// In arrival order, so that receive slots free in the order they were posted.
Status RingReduceScatter::reduceArrived() {
  const size_t esize = args_.elem_size;
  while (arrived_.index() < posted_.index()) {
    const transport::Completion& completion = op_.recvs->at(arrived_.index());
    if (!completion.isDone()) break;
    if (!completion.status.isOk()) return completion.status;
    const std::byte* theirs = recvSlot(arrived_.index());
    const std::byte* mine = args_.input + arrived_.bufferOffset() * esize;
    size_t elems = arrived_.count();
    if (arrived_.lastStep()) {
      // The last step's block is this rank's own: in place, `out` and `mine` are the same memory.
      std::byte* out = args_.output + arrived_.blockOffset() * esize;
      args_.kernel.combine(out, theirs, mine, elems);
      if (args_.kernel.finalize != nullptr) args_.kernel.finalize(out, elems, op_.nranks);
    } else {
      PSDP_ASSIGN_OR_RETURN(bool ready, forwardReady());
      if (!ready) break;
      std::byte* partial = sendSlot(sends_.next().index());
      args_.kernel.combine(partial, theirs, mine, elems);
      PSDP_RETURN_IF_ERROR(sends_.post(partial));
    }
    arrived_.advance();
    moved_ = true;
  }
  return Status::ok();
}

Status RingReduceScatter::postRecvs() {
  while (!posted_.done() && posted_.index() - arrived_.index() < depth()) {
    transport::Completion& completion = op_.recvs->at(posted_.index());
    completion.reset();
    PSDP_RETURN_IF_ERROR(op_.transport->recv(op_.leftPeer(), op_.tag, recvSlot(posted_.index()),
                                             posted_.count() * args_.elem_size, &completion));
    posted_.advance();
    moved_ = true;
  }
  return Status::ok();
}

// The forward of arrived_ must be the next send: sends go out in schedule order, and the step-0 sends of
// its round come first.
Result<bool> RingReduceScatter::forwardReady() const {
  const RingCursor& next = sends_.next();
  uint64_t target = arrived_.position() + depth();
  if (next.done() || next.position() > target) {
    return Status::internal("{}: ring schedule out of step (send position {}, forward position {})", op_.describe(),
                            next.position(), target);
  }
  if (next.position() < target) return false;
  return sends_.slotFree();
}

}  // namespace

PhasePtr startRingReduceScatter(PhaseStorage& storage, const OpContext& op, const RingReduceScatterArgs& args) {
  return PhasePtr(storage.make<RingReduceScatter>(op, args));
}

}  // namespace psdp::coll
