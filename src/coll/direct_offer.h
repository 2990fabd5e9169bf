// What a rank tells every peer when an operation may run direct (coll/direct_phase.h): where its two buffers
// lie (their handles: addresses, for a peer in the same process or one that reads them, and whether a peer
// of the host can map them), whether it can read the memory of the other processes of its host, and whether
// its rule lets this operation read them (rule option cma, which may differ between ranks whose lanes
// differ: core/tuning.h). Where
// each rank runs was settled at connect (transport/peer_memory.h) and is known alike to every rank, so each
// decides from the same facts whether all ranks can reach all buffers (directReachable) and how
// (needsPeerReads).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/status.h"
#include "transport/peer_memory.h"

namespace psdp::coll {

struct DirectOffer {
  transport::MemoryHandle send;
  transport::MemoryHandle recv;
  transport::ReadAccess reads = transport::ReadAccess::kUnknown;
  bool cma = true;  // this rank's rule lets the operation read other processes' memory
};

inline constexpr size_t kDirectOfferBytes = 112;
using DirectOfferBytes = std::array<std::byte, kDirectOfferBytes>;

DirectOfferBytes encodeDirectOffer(const DirectOffer& offer);
// Errors: mismatch (wrong length or magic: the sender is not running the direct phase of this operation).
Result<DirectOffer> decodeDirectOffer(std::span<const std::byte> bytes);

// Whether rank `from` maps both of `to`'s buffers: another process of the host, with both in shareable
// memory.
bool mapsBuffers(const transport::PeerMemory& memory, int from, const DirectOffer& to_offer, int to);

// Whether rank `from` can use rank `to`'s buffers: they are in one process, or in two processes of the
// same host and either both of `to`'s buffers are shareable or `from` can read other processes.
bool canReach(const transport::PeerMemory& memory, std::span<const DirectOffer> offers, int from, int to);

// canReach for every ordered pair of ranks. A pure function of all offers and the placement: every rank gets
// the same answer.
bool directReachable(const transport::PeerMemory& memory, std::span<const DirectOffer> offers);
// Whether some rank reaches another's buffers only by reading them. Pure, like directReachable.
bool needsPeerReads(const transport::PeerMemory& memory, std::span<const DirectOffer> offers);
// Whether every rank's rule lets the operation read other processes' memory. Pure, like directReachable.
bool everyRuleAllowsReads(std::span<const DirectOffer> offers);
// Whether some rank does not know yet whether it can read: a fallback then says nothing about the next
// operation.
bool peerReadsUndecided(std::span<const DirectOffer> offers);

}  // namespace psdp::coll
