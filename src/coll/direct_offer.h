// What a rank tells every peer when an operation may run direct (coll/direct_phase.h): which process it
// is, and where its two buffers lie: their addresses, for a peer in the same process, and their shared
// segments, for a peer in another process of the host. Every rank receives every offer, so each decides
// from the same facts whether all ranks can reach all buffers (directReachable).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/status.h"
#include "transport/process_identity.h"
#include "transport/shared_segment.h"

namespace psdp::coll {

struct BufferOffer {
  uint64_t address = 0;
  uint64_t bytes = 0;
  // The whole range lies in a psdp_mem_alloc buffer, described by `segment`; also true of an empty range,
  // which needs none (segment then unset).
  bool in_segment = false;
  transport::SegmentRef segment;

  // Describes [ptr, ptr + bytes) of this process.
  static BufferOffer of(const void* ptr, size_t bytes);
};

struct DirectOffer {
  transport::ProcessIdentity process;
  BufferOffer send;
  BufferOffer recv;
};

inline constexpr size_t kDirectOfferBytes = 160;
using DirectOfferBytes = std::array<std::byte, kDirectOfferBytes>;

DirectOfferBytes encodeDirectOffer(const DirectOffer& offer);
// Errors: mismatch (wrong length or magic: the sender is not running the direct phase of this operation).
Result<DirectOffer> decodeDirectOffer(std::span<const std::byte> bytes);

// Two ranks in one process address each other's buffers as they are. False while either's pid namespace
// or boot id is unknown.
bool sameProcess(const transport::ProcessIdentity& a, const transport::ProcessIdentity& b);

// Whether rank `from` can use rank `to`'s buffers: they are in one process, or in two processes of the
// same host and both of `to`'s buffers lie in shared segments.
bool canReach(const DirectOffer& from, const DirectOffer& to);

// canReach for every ordered pair of ranks. A pure function of all offers: every rank gets the same answer.
bool directReachable(std::span<const DirectOffer> offers);

}  // namespace psdp::coll
