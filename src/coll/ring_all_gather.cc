// Fragments arrive straight in the output and are forwarded from there once they have arrived, G
// positions later in the send stream (ring_schedule.h). No staging is involved, so the only limits are the
// depth() completions of each direction; a receive's completion is freed by its arrival alone, which keeps
// the ring from deadlocking whatever the sends wait for.
//
// Out of place, this rank's own block is copied into the output one fragment per advance(), after the
// transfers have been posted, so the copy overlaps them instead of delaying the whole ring. No send reads
// the output's own block: step 0 sends from the input, and forwards only carry other ranks' blocks.
#include "coll/ring_all_gather.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "coll/progress_loop.h"
#include "coll/ring_send_stream.h"
#include "coll/streaming_store.h"

namespace psdp::coll {
namespace {

// Step 0 sends this rank's own block; the receive schedule is the left neighbour's send schedule.
constexpr int kSendShift = 0;
constexpr int kRecvShift = 1;

class RingAllGather final : public Phase {
 public:
  RingAllGather(const OpContext& op, const RingAllGatherArgs& args)
      : op_(op),
        args_(args),
        shape_{op.rank, op.nranks, args.frag_elems, op.depth()},
        sends_(op, RingCursor(args.layout, shape_, kSendShift), args.elem_size),
        posted_(args.layout, shape_, kRecvShift),
        arrived_(posted_),
        own_output_(args.output + args.layout.offset(op.rank) * args.elem_size),
        own_bytes_(args.own == own_output_ ? 0 : args.layout.size(op.rank) * args.elem_size) {}

  Result<Progress> advance() override;
  std::string waitingFor() const override {
    return describeRingWait(op_, "all-gather", arrived_.index(), posted_.index(), sends_.windowBegin(),
                            sends_.next().index());
  }

 private:
  Status takeArrivals();
  Status postSends();
  Status postRecvs();
  void copyOwnPiece();

  uint64_t depth() const { return static_cast<uint64_t>(op_.depth()); }

  const OpContext& op_;
  const RingAllGatherArgs& args_;
  RingShape shape_;
  RingSendStream sends_;
  RingCursor posted_;   // the next receive to post
  RingCursor arrived_;  // the next receive to see complete
  std::byte* own_output_;
  size_t own_bytes_;       // 0 in place
  size_t own_copied_ = 0;  // bytes of the own block already in the output
  bool moved_ = false;
};

Result<Progress> RingAllGather::advance() {
  moved_ = false;
  PSDP_RETURN_IF_ERROR(takeArrivals());
  PSDP_RETURN_IF_ERROR(postSends());
  PSDP_RETURN_IF_ERROR(postRecvs());
  copyOwnPiece();
  PSDP_ASSIGN_OR_RETURN(bool sends_settled, sends_.settled());
  bool copied = own_copied_ == own_bytes_;
  if (sends_.next().done() && arrived_.done() && sends_settled && copied) return Progress::kDone;
  return moved_ ? Progress::kAdvanced : Progress::kBlocked;
}

Status RingAllGather::takeArrivals() {
  while (arrived_.index() < posted_.index()) {
    const transport::Completion& completion = op_.recvs->at(arrived_.index());
    if (!completion.isDone()) break;
    if (!completion.status.isOk()) return completion.status;
    arrived_.advance();
    moved_ = true;
  }
  return Status::ok();
}

Status RingAllGather::postSends() {
  const size_t esize = args_.elem_size;
  while (!sends_.next().done()) {
    const RingCursor& next = sends_.next();
    const std::byte* data = args_.own + next.blockOffset() * esize;
    if (next.step() > 0) {
      // A forward: the fragment arrived at the previous step, depth() positions earlier.
      if (arrived_.position() + depth() <= next.position()) break;
      data = args_.output + next.bufferOffset() * esize;
    }
    PSDP_ASSIGN_OR_RETURN(bool free, sends_.slotFree());
    if (!free) break;
    PSDP_RETURN_IF_ERROR(sends_.post(data));
    moved_ = true;
  }
  return Status::ok();
}

Status RingAllGather::postRecvs() {
  while (!posted_.done() && posted_.index() - arrived_.index() < depth()) {
    transport::Completion& completion = op_.recvs->at(posted_.index());
    completion.reset();
    std::byte* dst = args_.output + posted_.bufferOffset() * args_.elem_size;
    PSDP_RETURN_IF_ERROR(
        op_.transport->recv(op_.leftPeer(), op_.tag, dst, posted_.count() * args_.elem_size, &completion));
    posted_.advance();
    moved_ = true;
  }
  return Status::ok();
}

void RingAllGather::copyOwnPiece() {
  if (own_copied_ == own_bytes_) return;
  size_t piece = std::min(own_bytes_ - own_copied_, args_.frag_elems * args_.elem_size);
  streamingCopy(own_output_ + own_copied_, args_.own + own_copied_, piece);
  own_copied_ += piece;
  moved_ = true;
}

}  // namespace

PhasePtr startRingAllGather(PhaseStorage& storage, const OpContext& op, const RingAllGatherArgs& args) {
  return PhasePtr(storage.make<RingAllGather>(op, args));
}

}  // namespace psdp::coll
