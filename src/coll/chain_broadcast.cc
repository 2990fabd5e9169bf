// Each rank keeps four counters over the fragments: receives posted and arrived (from the previous rank in
// the chain), sends posted and completed (to the next one). Completions are reused round-robin by
// fragment index, at most depth() of each direction outstanding; a fragment is forwarded only after it has
// arrived, so the order of the sends is the order of the receives and both ends of a link agree.
#include "coll/chain_broadcast.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace psdp::coll {
namespace {

class ChainBroadcast final : public Phase {
 public:
  ChainBroadcast(const OpContext& op, const ChainBroadcastArgs& args)
      : op_(op),
        args_(args),
        position_((op.rank - args.root + op.nranks) % op.nranks),
        frags_((args.count + args.frag_elems - 1) / args.frag_elems) {}

  Result<Progress> advance() override;
  std::string waitingFor() const override {
    return fmt::format(
        "peer {} ({} of {} fragments arrived) and peer {} ({} of {} sends done) in the broadcast "
        "from root {}",
        prevPeer(), arrived_, hasPrev() ? frags_ : 0, nextPeer(), sent_, hasNext() ? frags_ : 0, args_.root);
  }

 private:
  bool hasPrev() const { return position_ > 0; }
  bool hasNext() const { return position_ < op_.nranks - 1; }
  int prevPeer() const { return (op_.rank - 1 + op_.nranks) % op_.nranks; }
  int nextPeer() const { return (op_.rank + 1) % op_.nranks; }
  uint64_t depth() const { return static_cast<uint64_t>(op_.depth()); }
  size_t fragBytes(uint64_t frag) const {
    size_t first = static_cast<size_t>(frag) * args_.frag_elems;
    return std::min(args_.frag_elems, args_.count - first) * args_.elem_size;
  }
  std::byte* fragData(uint64_t frag) const {
    return args_.output + static_cast<size_t>(frag) * args_.frag_elems * args_.elem_size;
  }
  Status postRecvs();
  Status postSends();

  const OpContext& op_;
  const ChainBroadcastArgs& args_;
  const int position_;  // distance from the root along the chain
  const uint64_t frags_;
  uint64_t recv_posted_ = 0;
  uint64_t arrived_ = 0;
  uint64_t send_posted_ = 0;
  uint64_t sent_ = 0;
  bool moved_ = false;
};

Result<Progress> ChainBroadcast::advance() {
  PSDP_ASSIGN_OR_RETURN(bool received, settleInOrder(*op_.recvs, recv_posted_, &arrived_));
  PSDP_ASSIGN_OR_RETURN(bool sent, settleInOrder(*op_.sends, send_posted_, &sent_));
  moved_ = received || sent;
  PSDP_RETURN_IF_ERROR(postRecvs());
  PSDP_RETURN_IF_ERROR(postSends());
  bool received_all = !hasPrev() || arrived_ == frags_;
  bool sent_all = !hasNext() || sent_ == frags_;
  if (received_all && sent_all) return Progress::kDone;
  return moved_ ? Progress::kAdvanced : Progress::kBlocked;
}

Status ChainBroadcast::postRecvs() {
  if (!hasPrev()) return Status::ok();
  while (recv_posted_ < frags_ && recv_posted_ - arrived_ < depth()) {
    transport::Completion& completion = op_.recvs->at(recv_posted_);
    completion.reset();
    PSDP_RETURN_IF_ERROR(
        op_.transport->recv(prevPeer(), op_.tag, fragData(recv_posted_), fragBytes(recv_posted_), &completion));
    ++recv_posted_;
    moved_ = true;
  }
  return Status::ok();
}

Status ChainBroadcast::postSends() {
  if (!hasNext()) return Status::ok();
  // The root has every fragment from the start; the others forward what has arrived.
  uint64_t available = hasPrev() ? arrived_ : frags_;
  while (send_posted_ < available && send_posted_ - sent_ < depth()) {
    transport::Completion& completion = op_.sends->at(send_posted_);
    completion.reset();
    PSDP_RETURN_IF_ERROR(
        op_.transport->send(nextPeer(), op_.tag, fragData(send_posted_), fragBytes(send_posted_), &completion));
    ++send_posted_;
    moved_ = true;
  }
  return Status::ok();
}

}  // namespace

PhasePtr startChainBroadcast(PhaseStorage& storage, const OpContext& op, const ChainBroadcastArgs& args) {
  if (op.rank == args.root && args.input != args.output) {
    std::memcpy(args.output, args.input, args.count * args.elem_size);
  }
  return PhasePtr(storage.make<ChainBroadcast>(op, args));
}

}  // namespace psdp::coll
