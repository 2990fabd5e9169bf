// The tag of every message a collective sends. Layout of the caller's 40 bits (transport::kTagBits):
//
//   bit  39      never set: transport::kReservedTagBit, the backends' own (UCX's wire-up exchange)
//   bits 23..38  context id (16 bits): communicators that share one transport never match each other
//   bit  22      the agreement channel (makeHeaderTag): every operation's header, whatever its sequence
//                number; the bits below it then hold the agreement round
//   bits  0..21  operation sequence number (22 bits, wrapping)
//
// Fragments and ring steps need no bits of their own: between one pair of ranks, messages with equal tags
// match in the order they were posted, and both ends of a link walk the same schedule (ring_schedule.h).
// The sequence number keeps the data of ranks that disagree on the order of collectives (a caller's bug) from
// matching; the header channel, which carries no sequence number in its tag, is what reports the
// disagreement (coll/op_header.h). Tags of two operations alias only if 2^22 of them are outstanding at once
// (posted but not yet complete on some rank), far more than any caller queues.
#pragma once

#include <cstdint>

#include "transport/transport.h"

namespace psdp::coll {

inline constexpr int kTagSeqBits = 22;
inline constexpr int kTagContextBits = 16;
inline constexpr int kTagContextShift = kTagSeqBits + 1;
inline constexpr transport::Tag kTagHeaderBit = transport::Tag{1} << kTagSeqBits;
inline constexpr transport::Tag kTagSeqMask = kTagHeaderBit - 1;
inline constexpr transport::Tag kTagContextMask = (transport::Tag{1} << kTagContextBits) - 1;

static_assert(kTagSeqBits + kTagContextBits < transport::kTagBits, "the top tag bit is left to the transport");

// Only the low 16 bits of `context_id` and the low 22 bits of `seq` are kept.
constexpr transport::Tag makeTag(uint32_t context_id, uint32_t seq) {
  return ((transport::Tag{context_id} & kTagContextMask) << kTagContextShift) | (transport::Tag{seq} & kTagSeqMask);
}

// `round` < 32 (coll/op_header_check.h).
constexpr transport::Tag makeHeaderTag(uint32_t context_id, int round) {
  return ((transport::Tag{context_id} & kTagContextMask) << kTagContextShift) | kTagHeaderBit |
         static_cast<transport::Tag>(round & 31);
}

static_assert((makeTag(~0u, ~0u) & ~transport::kTagMask) == 0, "collective tags fit the caller's tag bits");
static_assert((makeTag(~0u, ~0u) & transport::kReservedTagBit) == 0, "collective tags leave the reserved bit clear");
static_assert((makeHeaderTag(~0u, 31) & ~transport::kTagMask) == 0, "header tags fit the caller's tag bits");
static_assert((makeHeaderTag(~0u, 31) & transport::kReservedTagBit) == 0, "header tags leave the reserved bit clear");

}  // namespace psdp::coll
