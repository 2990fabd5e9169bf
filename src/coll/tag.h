// The tag of every message a collective sends. Layout of the caller's 45 bits (transport::kTagBits):
//
//   bit  44      never set: transport::kReservedTagBit, the backends' own (UCX's wire-up exchange)
//   bits 28..43  context id (16 bits): communicators that share one transport never match each other
//   bit  27      the agreement channel (makeHeaderTag): an operation's header
//   bits 22..26  the agreement round (header tags only; 0 in data tags)
//   bits  0..21  operation sequence number (22 bits, wrapping)
//
// Point-to-point messages (psdp_send / psdp_recv) take no sequence number of the team, since only two of its
// ranks make them: they carry the header bit with round kPointToPointRound, which no agreement reaches (it
// needs ceil(log2(nranks)) <= 19 rounds for the ranks the transport allows), and a sequence number of their
// own, counted per ordered pair of ranks (makePointToPointTag).
//
// Fragments and ring steps need no bits of their own: between one pair of ranks, messages with equal tags
// match in the order they were posted, and both ends of a link walk the same schedule (ring_schedule.h).
// Several operations of one communicator run at once, each on its own sequence number, so their data and
// their agreement rounds never match each other; the sequence number also keeps the data of ranks that
// disagree on the order of collectives (a caller's bug) apart, and the agreement reports that disagreement
// (coll/op_header.h). Tags of two operations alias only if 2^22 of them are outstanding at once (posted but
// not yet complete on some rank), far more than any caller queues.
#pragma once

#include <cstdint>

#include "transport/transport.h"

namespace psdp::coll {

inline constexpr int kTagSeqBits = 22;
inline constexpr int kTagRoundBits = 5;
inline constexpr int kTagContextBits = 16;
inline constexpr int kTagRoundShift = kTagSeqBits;
inline constexpr int kTagHeaderShift = kTagRoundShift + kTagRoundBits;
inline constexpr int kTagContextShift = kTagHeaderShift + 1;
inline constexpr transport::Tag kTagHeaderBit = transport::Tag{1} << kTagHeaderShift;
inline constexpr transport::Tag kTagSeqMask = (transport::Tag{1} << kTagSeqBits) - 1;
inline constexpr transport::Tag kTagRoundMask = (transport::Tag{1} << kTagRoundBits) - 1;
inline constexpr transport::Tag kTagContextMask = (transport::Tag{1} << kTagContextBits) - 1;
// Agreement rounds are ceil(log2(nranks)): 32 of them cover every rank count the transport allows.
inline constexpr int kMaxAgreementRounds = 1 << kTagRoundBits;

static_assert(kTagContextShift + kTagContextBits < transport::kTagBits, "the top tag bit is left to the transport");

// Only the low 16 bits of `context_id` and the low 22 bits of `seq` are kept.
constexpr transport::Tag makeTag(uint32_t context_id, uint32_t seq) {
  return ((transport::Tag{context_id} & kTagContextMask) << kTagContextShift) | (transport::Tag{seq} & kTagSeqMask);
}

// Round `round` (< kMaxAgreementRounds) of the agreement of operation `seq` (coll/op_header_check.h).
constexpr transport::Tag makeHeaderTag(uint32_t context_id, uint32_t seq, int round) {
  return makeTag(context_id, seq) | kTagHeaderBit |
         ((static_cast<transport::Tag>(round) & kTagRoundMask) << kTagRoundShift);
}

// The n-th send from one rank to another (n = seq, counted by both ends).
inline constexpr int kPointToPointRound = kMaxAgreementRounds - 1;
constexpr transport::Tag makePointToPointTag(uint32_t context_id, uint32_t seq) {
  return makeHeaderTag(context_id, seq, kPointToPointRound);
}

static_assert((makeTag(~0u, ~0u) & ~transport::kTagMask) == 0, "collective tags fit the caller's tag bits");
static_assert((makeTag(~0u, ~0u) & transport::kReservedTagBit) == 0, "collective tags leave the reserved bit clear");
static_assert((makeHeaderTag(~0u, ~0u, 31) & ~transport::kTagMask) == 0, "header tags fit the caller's tag bits");
static_assert((makeHeaderTag(~0u, ~0u, 31) & transport::kReservedTagBit) == 0,
              "header tags leave the reserved bit clear");

}  // namespace psdp::coll
