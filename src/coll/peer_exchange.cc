// Messages go out to the peers in the order rank+1, rank+2, ... and are expected from rank-1, rank-2, ...,
// so that at each moment the ranks of an all-to-all mostly talk to distinct peers rather than all to the same
// one. At most depth() of each direction are outstanding; completions are reused round-robin and counted in
// order. Messages between one pair carry the operation's tag and there is at most one per direction, so
// nothing else needs to match.
#include "coll/peer_exchange.h"

#include <fmt/format.h>

#include <cstring>
#include <string>

namespace psdp::coll {
namespace {

struct Outgoing {
  int peer = 0;
  const std::byte* data = nullptr;
};
struct Incoming {
  int peer = 0;
  std::byte* data = nullptr;
};

class PeerExchange final : public Phase {
 public:
  PeerExchange(const OpContext& op, const PeerExchangeArgs& args)
      : op_(op), args_(args), nsends_(countSends()), nrecvs_(countRecvs()) {}

  Result<Progress> advance() override;
  std::string waitingFor() const override;

 private:
  bool isRoot() const { return op_.rank == args_.root; }
  int countSends() const {
    if (args_.pattern == ExchangePattern::kGather) return isRoot() ? 0 : 1;
    if (args_.pattern == ExchangePattern::kScatter) return isRoot() ? op_.nranks - 1 : 0;
    return op_.nranks - 1;
  }
  int countRecvs() const {
    if (args_.pattern == ExchangePattern::kGather) return isRoot() ? op_.nranks - 1 : 0;
    if (args_.pattern == ExchangePattern::kScatter) return isRoot() ? 0 : 1;
    return op_.nranks - 1;
  }
  int peerAt(int distance) const { return (op_.rank + distance + op_.nranks) % op_.nranks; }
  // The i-th send and receive of this rank (0-based); each moves one block.
  Outgoing send(int i) const {
    if (args_.pattern == ExchangePattern::kGather) return {args_.root, args_.input};
    int peer = peerAt(i + 1);
    return {peer, args_.input + static_cast<size_t>(peer) * args_.block_bytes};
  }
  Incoming recv(int i) const {
    if (args_.pattern == ExchangePattern::kScatter) return {args_.root, args_.output};
    int peer = peerAt(-(i + 1));
    return {peer, args_.output + static_cast<size_t>(peer) * args_.block_bytes};
  }
  uint64_t depth() const { return static_cast<uint64_t>(op_.depth()); }

  const OpContext& op_;
  const PeerExchangeArgs& args_;
  const int nsends_;
  const int nrecvs_;
  uint64_t sends_posted_ = 0;
  uint64_t sent_ = 0;
  uint64_t recvs_posted_ = 0;
  uint64_t arrived_ = 0;
};

Result<Progress> PeerExchange::advance() {
  PSDP_ASSIGN_OR_RETURN(bool received, settleInOrder(*op_.recvs, recvs_posted_, &arrived_));
  PSDP_ASSIGN_OR_RETURN(bool sent, settleInOrder(*op_.sends, sends_posted_, &sent_));
  bool moved = received || sent;
  while (recvs_posted_ < static_cast<uint64_t>(nrecvs_) && recvs_posted_ - arrived_ < depth()) {
    Incoming in = recv(static_cast<int>(recvs_posted_));
    transport::Completion& completion = op_.recvs->at(recvs_posted_);
    completion.reset();
    PSDP_RETURN_IF_ERROR(op_.transport->recv(in.peer, op_.tag, in.data, args_.block_bytes, &completion));
    ++recvs_posted_;
    moved = true;
  }
  while (sends_posted_ < static_cast<uint64_t>(nsends_) && sends_posted_ - sent_ < depth()) {
    Outgoing out = send(static_cast<int>(sends_posted_));
    transport::Completion& completion = op_.sends->at(sends_posted_);
    completion.reset();
    PSDP_RETURN_IF_ERROR(op_.transport->send(out.peer, op_.tag, out.data, args_.block_bytes, &completion));
    ++sends_posted_;
    moved = true;
  }
  if (arrived_ == static_cast<uint64_t>(nrecvs_) && sent_ == static_cast<uint64_t>(nsends_)) return Progress::kDone;
  return moved ? Progress::kAdvanced : Progress::kBlocked;
}

// "peer 3 (1 of 3 blocks arrived) and peer 1 (2 of 3 sends done)", naming the peer of the oldest incomplete
// transfer of each direction.
std::string PeerExchange::waitingFor() const {
  std::string text;
  if (arrived_ < static_cast<uint64_t>(nrecvs_)) {
    text = fmt::format("peer {} ({} of {} blocks arrived)", recv(static_cast<int>(arrived_)).peer, arrived_, nrecvs_);
  }
  if (sent_ < static_cast<uint64_t>(nsends_)) {
    if (!text.empty()) text += " and ";
    text += fmt::format("peer {} ({} of {} sends done)", send(static_cast<int>(sent_)).peer, sent_, nsends_);
  }
  return text.empty() ? std::string("nothing") : text;
}

}  // namespace

PhasePtr startPeerExchange(PhaseStorage& storage, const OpContext& op, const PeerExchangeArgs& args) {
  const size_t own = static_cast<size_t>(op.rank) * args.block_bytes;
  const std::byte* from = nullptr;
  std::byte* to = nullptr;
  switch (args.pattern) {
    case ExchangePattern::kGather:
      if (op.rank == args.root) from = args.input, to = args.output + own;
      break;
    case ExchangePattern::kScatter:
      if (op.rank == args.root) from = args.input + own, to = args.output;
      break;
    case ExchangePattern::kAllToAll: from = args.input + own, to = args.output + own; break;
  }
  if (from != nullptr && from != to) std::memcpy(to, from, args.block_bytes);
  return PhasePtr(storage.make<PeerExchange>(op, args));
}

}  // namespace psdp::coll
