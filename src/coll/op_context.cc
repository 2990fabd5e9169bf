#include "coll/op_context.h"

#include <fmt/format.h>

namespace psdp::coll {
namespace {

int countPending(CompletionRing& ring, uint64_t begin, uint64_t end) {
  int pending = 0;
  for (uint64_t i = begin; i < end; ++i) pending += ring.at(i).isDone() ? 0 : 1;
  return pending;
}

}  // namespace

Result<bool> settleInOrder(CompletionRing& ring, uint64_t posted, uint64_t* done) {
  bool moved = false;
  while (*done < posted) {
    const transport::Completion& completion = ring.at(*done);
    if (!completion.isDone()) break;
    if (!completion.status.isOk()) return completion.status;
    ++*done;
    moved = true;
  }
  return moved;
}

std::string describeRingWait(const OpContext& op, const char* phase, uint64_t recv_begin, uint64_t recv_end,
                             uint64_t send_begin, uint64_t send_end) {
  int recvs = countPending(*op.recvs, recv_begin, recv_end);
  int sends = countPending(*op.sends, send_begin, send_end);
  std::string text;
  if (recvs > 0) text = fmt::format("peer {} ({} receive{})", op.leftPeer(), recvs, recvs == 1 ? "" : "s");
  if (sends > 0) {
    if (!text.empty()) text += " and ";
    text += fmt::format("peer {} ({} send{})", op.rightPeer(), sends, sends == 1 ? "" : "s");
  }
  if (text.empty()) text = fmt::format("peers {} and {}", op.leftPeer(), op.rightPeer());
  return fmt::format("{} in the {} phase", text, phase);
}

}  // namespace psdp::coll
