// The agreement of one operation: before it may complete, every rank learns, by dissemination over
// ceil(log2(nranks)) rounds (round r: send to rank + 2^r, receive from rank - 2^r), whether every rank
// called it with the same header (coll/op_header.h). Each message carries the sender's header and the
// first disagreement it knows of, so after the last round every rank has heard, directly or not, from
// every other one. No rank therefore returns success from a call some other rank made differently, even
// when its own data happened to fit; and the rank that first sees a difference fails at once, so that its
// fail notice reaches the others before their rounds would (coll/task_queue.h).
//
// The data transfers do not wait for it: a matching call costs a few small messages alongside its data,
// and the exchange is itself a barrier, which is all the barrier collective does.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>

#include "base/status.h"
#include "coll/op_header.h"
#include "transport/transport.h"

namespace psdp::coll {

struct OpContext;

// What one rank knows after a round: its own header and the first disagreement it has seen or heard of.
struct OpAgreement {
  OpHeader header;
  bool disagree = false;
  int32_t rank_a = -1, rank_b = -1;  // rank_a called header_a, rank_b called header_b
  OpHeader header_a, header_b;

  bool operator==(const OpAgreement&) const = default;
};

inline constexpr size_t kOpAgreementBytes = 3 * kOpHeaderBytes + 16;
using OpAgreementBytes = std::array<std::byte, kOpAgreementBytes>;

OpAgreementBytes encodeOpAgreement(const OpAgreement& agreement);
// Errors: mismatch (wrong length, or a header that does not decode).
Result<OpAgreement> decodeOpAgreement(const std::byte* data, size_t bytes);

// The messages of one task slot's agreements (coll/collectives.cc): one per round and direction in flight at
// most, since a slot runs one operation at a time, in memory that outlives whatever a failed operation leaves
// posted. The tags carry the operation's sequence number, so the agreements of operations in other slots never
// match these.
class AgreementChannel {
 public:
  struct Round {
    OpAgreementBytes outgoing{};
    OpAgreementBytes incoming{};
    transport::Completion sent;
    transport::Completion received;
  };

  AgreementChannel(uint32_t context_id, int nranks);
  int rounds() const { return rounds_; }
  Round& round(int r) { return round_[r]; }
  const Round& round(int r) const { return round_[r]; }
  uint32_t contextId() const { return context_id_; }

 private:
  uint32_t context_id_;
  int rounds_;
  std::unique_ptr<Round[]> round_;
};

class OpHeaderCheck {
 public:
  // Posts the receives of every round and the send of the first. REQUIRES: op.nranks > 1; no other operation
  // uses op.agreement until poll() has returned true or an error.
  Status post(const OpContext& op);
  // True once every round has completed and no rank disagrees. Errors: mismatch naming two ranks that
  // disagree and what each called; the transport's error (a lost peer).
  Result<bool> poll(const OpContext& op);
  // For timeout messages: empty once every round's message has arrived.
  std::string waitingFor(const OpContext& op) const;

 private:
  Status sendRound(const OpContext& op);

  OpAgreement known_;
  int round_ = 0;  // the round whose message is awaited
  bool checked_ = false;
};

}  // namespace psdp::coll
