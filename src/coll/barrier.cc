#include "coll/barrier.h"

#include <fmt/format.h>

#include <memory>
#include <string>

#include "coll/progress_loop.h"

namespace psdp::coll {
namespace {

class DisseminationBarrier final : public Phase {
 public:
  explicit DisseminationBarrier(const OpContext& op) : op_(op) {}

  Result<Progress> advance() override;
  std::string waitingFor() const override {
    const char* what = !op_.recvs->at(0).isDone() ? "message from" : "send to";
    int peer = !op_.recvs->at(0).isDone() ? fromPeer() : toPeer();
    return fmt::format("the {} peer {} in barrier round {}", what, peer, round_);
  }

 private:
  int distance() const { return 1 << round_; }
  int toPeer() const { return (op_.rank + distance()) % op_.nranks; }
  int fromPeer() const { return ((op_.rank - distance()) % op_.nranks + op_.nranks) % op_.nranks; }
  Status postRound();

  const OpContext& op_;
  int round_ = 0;
  bool posted_ = false;
};

Result<Progress> DisseminationBarrier::advance() {
  bool moved = false;
  // Distances 1, 2, 4, ... below nranks are distinct, so a pair exchanges at most one message per barrier.
  while (distance() < op_.nranks) {
    if (!posted_) {
      PSDP_RETURN_IF_ERROR(postRound());
      moved = true;
    }
    transport::Completion& sent = op_.sends->at(0);
    transport::Completion& received = op_.recvs->at(0);
    if (sent.isDone() && !sent.status.isOk()) return sent.status;
    if (received.isDone() && !received.status.isOk()) return received.status;
    // The send is waited for too: its completion is reused by the next round.
    if (!sent.isDone() || !received.isDone()) break;
    ++round_;
    posted_ = false;
    moved = true;
  }
  if (distance() >= op_.nranks) return Progress::kDone;
  return moved ? Progress::kAdvanced : Progress::kBlocked;
}

// Zero-byte messages still get a valid buffer: the first staging slot, which nothing else uses meanwhile.
Status DisseminationBarrier::postRound() {
  std::byte* scratch = op_.staging->slot(0);
  transport::Completion& sent = op_.sends->at(0);
  transport::Completion& received = op_.recvs->at(0);
  received.reset();
  PSDP_RETURN_IF_ERROR(op_.transport->recv(fromPeer(), op_.tag, scratch, 0, &received));
  sent.reset();
  PSDP_RETURN_IF_ERROR(op_.transport->send(toPeer(), op_.tag, scratch, 0, &sent));
  posted_ = true;
  return Status::ok();
}

}  // namespace

std::unique_ptr<Phase> startDisseminationBarrier(const OpContext& op) {
  return std::make_unique<DisseminationBarrier>(op);
}

}  // namespace psdp::coll
