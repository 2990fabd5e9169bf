#include "coll/recursive_exchange.h"

#include <fmt/format.h>

namespace psdp::coll {

RecursiveGroup::RecursiveGroup(int rank, int nranks) {
  while (p * 2 <= nranks) {
    p *= 2;
    ++steps;
  }
  extra = nranks - p;
  if (rank < 2 * extra) {
    vrank = rank % 2 == 1 ? rank / 2 : -1;
  } else {
    vrank = rank - extra;
  }
}

Status PairExchange::post(int send_peer, const std::byte* send, size_t send_bytes, int recv_peer, std::byte* recv,
                          size_t recv_bytes) {
  send_peer_ = send_peer;
  recv_peer_ = recv_peer;
  if (recv_peer >= 0) {
    transport::Completion& completion = op_.recvs->at(0);
    completion.reset();
    PSDP_RETURN_IF_ERROR(op_.transport->recv(recv_peer, op_.tag, recv, recv_bytes, &completion));
  }
  if (send_peer >= 0) {
    transport::Completion& completion = op_.sends->at(0);
    completion.reset();
    PSDP_RETURN_IF_ERROR(op_.transport->send(send_peer, op_.tag, send, send_bytes, &completion));
  }
  return Status::ok();
}

Result<bool> PairExchange::complete() const {
  bool complete = true;
  for (auto [peer, completion] : {std::pair{recv_peer_, &op_.recvs->at(0)}, std::pair{send_peer_, &op_.sends->at(0)}}) {
    if (peer < 0) continue;
    if (!completion->isDone()) {
      complete = false;
    } else if (!completion->status.isOk()) {
      return completion->status;
    }
  }
  return complete;
}

std::string PairExchange::waitingFor(const char* algorithm, int step) const {
  std::string text;
  if (recv_peer_ >= 0 && !op_.recvs->at(0).isDone()) text = fmt::format("peer {} (receive)", recv_peer_);
  if (send_peer_ >= 0 && !op_.sends->at(0).isDone()) {
    if (!text.empty()) text += " and ";
    text += fmt::format("peer {} (send)", send_peer_);
  }
  if (text.empty()) text = "nothing";
  return fmt::format("{} in {} step {}", text, algorithm, step);
}

Result<Progress> ExchangeSteps::advance() {
  bool moved = false;
  while (step_ < steps_) {
    if (!posted_) {
      PSDP_RETURN_IF_ERROR(post());
      posted_ = true;
      moved = true;
    }
    PSDP_ASSIGN_OR_RETURN(bool complete, exchange_.complete());
    if (!complete) break;
    finish();
    ++step_;
    posted_ = false;
    moved = true;
  }
  if (step_ == steps_) return Progress::kDone;
  return moved ? Progress::kAdvanced : Progress::kBlocked;
}

}  // namespace psdp::coll
