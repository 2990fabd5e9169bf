#include "coll/op_header_check.h"

#include <fmt/format.h>

#include <cstring>

#include "coll/op_context.h"
#include "coll/tag.h"

namespace psdp::coll {
namespace {

int roundsFor(int nranks) {
  int rounds = 0;
  while ((1 << rounds) < nranks) ++rounds;
  return rounds;
}

int toPeer(const OpContext& op, int round) {
  return (op.rank + (1 << round)) % op.nranks;
}

int fromPeer(const OpContext& op, int round) {
  return ((op.rank - (1 << round)) % op.nranks + op.nranks) % op.nranks;
}

Status describeMismatch(const OpAgreement& known) {
  return Status::mismatch("collective mismatch: rank {} called {} but rank {} called {}", known.rank_a,
                          known.header_a.describe(), known.rank_b, known.header_b.describe());
}

}  // namespace

OpAgreementBytes encodeOpAgreement(const OpAgreement& a) {
  OpAgreementBytes bytes{};
  std::byte* p = bytes.data();
  for (const OpHeader* h : {&a.header, &a.header_a, &a.header_b}) {
    OpHeaderBytes encoded = encodeOpHeader(*h);
    std::memcpy(p, encoded.data(), encoded.size());
    p += encoded.size();
  }
  const int32_t tail[4] = {a.disagree ? 1 : 0, a.rank_a, a.rank_b, 0};
  std::memcpy(p, tail, sizeof(tail));
  return bytes;
}

Result<OpAgreement> decodeOpAgreement(const std::byte* data, size_t bytes) {
  if (bytes != kOpAgreementBytes) {
    return Status::mismatch("an operation agreement of {} bytes, expected {}", bytes, kOpAgreementBytes);
  }
  OpAgreement a;
  for (OpHeader* h : {&a.header, &a.header_a, &a.header_b}) {
    PSDP_ASSIGN_OR_RETURN(*h, decodeOpHeader(data, kOpHeaderBytes));
    data += kOpHeaderBytes;
  }
  int32_t tail[4];
  std::memcpy(tail, data, sizeof(tail));
  a.disagree = tail[0] != 0;
  a.rank_a = tail[1];
  a.rank_b = tail[2];
  return a;
}

AgreementChannel::AgreementChannel(uint32_t context_id, int nranks)
    : context_id_(context_id), rounds_(roundsFor(nranks)), round_(new Round[rounds_]) {}

Status OpHeaderCheck::post(const OpContext& op) {
  AgreementChannel& channel = *op.agreement;
  known_ = OpAgreement();
  known_.header = op.header;
  for (int r = 0; r < channel.rounds(); ++r) {
    AgreementChannel::Round& round = channel.round(r);
    round.sent.reset();
    round.received.reset();
    PSDP_RETURN_IF_ERROR(op.transport->recv(fromPeer(op, r), makeHeaderTag(channel.contextId(), op.header.seq, r),
                                            round.incoming.data(), round.incoming.size(), &round.received));
  }
  return sendRound(op);
}

Status OpHeaderCheck::sendRound(const OpContext& op) {
  AgreementChannel::Round& round = op.agreement->round(round_);
  round.outgoing = encodeOpAgreement(known_);
  return op.transport->send(toPeer(op, round_), makeHeaderTag(op.agreement->contextId(), op.header.seq, round_),
                            round.outgoing.data(), round.outgoing.size(), &round.sent);
}

Result<bool> OpHeaderCheck::poll(const OpContext& op) {
  if (checked_) return true;
  AgreementChannel& channel = *op.agreement;
  while (round_ < channel.rounds()) {
    const AgreementChannel::Round& round = channel.round(round_);
    if (!round.received.isDone()) return false;
    const int from = fromPeer(op, round_);
    if (!round.received.status.isOk()) {
      // A message of another size on this channel: whatever that rank runs, it is not this.
      if (round.received.status.code() == PSDP_ERR_MISMATCH) {
        return Status::mismatch("{}: rank {} sent something else than an operation header: {}", op.describe(), from,
                                round.received.status.message());
      }
      return round.received.status;
    }
    Result<OpAgreement> theirs = decodeOpAgreement(round.incoming.data(), round.incoming.size());
    if (!theirs.isOk()) return Status::mismatch("{}: from rank {}: {}", op.describe(), from, theirs.status().message());
    if (theirs.value().disagree) {
      known_ = theirs.value();
      known_.header = op.header;
    } else if (!(theirs.value().header == op.header)) {
      known_.disagree = true;
      known_.rank_a = from;
      known_.header_a = theirs.value().header;
      known_.rank_b = op.rank;
      known_.header_b = op.header;
    }
    if (known_.disagree) return describeMismatch(known_);
    ++round_;
    if (round_ < channel.rounds()) PSDP_RETURN_IF_ERROR(sendRound(op));
  }
  for (int r = 0; r < channel.rounds(); ++r) {
    const AgreementChannel::Round& round = channel.round(r);
    if (!round.sent.isDone()) return false;
    if (!round.sent.status.isOk()) return round.sent.status;
  }
  checked_ = true;
  return true;
}

std::string OpHeaderCheck::waitingFor(const OpContext& op) const {
  if (checked_ || round_ >= op.agreement->rounds()) return "";
  return fmt::format("the operation header from peer {} (agreement round {})", fromPeer(op, round_), round_);
}

}  // namespace psdp::coll
