// What a rank tells every peer when an operation may run direct (coll/direct_phase.h): which process it
// is, where its two buffers lie (their addresses, for a peer in the same process or one reading them with
// CMA, and their shared segments, for a peer that maps them) and whether it can read the other processes
// of the host with CMA. Every rank receives every offer, so each decides from the same facts whether all
// ranks can reach all buffers (directReachable) and how (needsCma).
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

// Whether a rank can read the memory of the other processes of its communicator with CMA: it finds out by
// trying (DirectPhase), so the first operations say kUnknown.
enum class CmaReach : uint32_t { kNo = 0, kUnknown = 1, kYes = 2 };

struct DirectOffer {
  transport::ProcessIdentity process;
  BufferOffer send;
  BufferOffer recv;
  CmaReach cma = CmaReach::kUnknown;
};

inline constexpr size_t kDirectOfferBytes = 160;
using DirectOfferBytes = std::array<std::byte, kDirectOfferBytes>;

DirectOfferBytes encodeDirectOffer(const DirectOffer& offer);
// Errors: mismatch (wrong length or magic: the sender is not running the direct phase of this operation).
Result<DirectOffer> decodeDirectOffer(std::span<const std::byte> bytes);

// Two ranks in one process address each other's buffers as they are. False while either's pid namespace
// or boot id is unknown.
bool sameProcess(const transport::ProcessIdentity& a, const transport::ProcessIdentity& b);

// Whether `to`'s buffers are mapped (both in shared segments) by `from`, another process of the host.
bool mapsSegments(const DirectOffer& from, const DirectOffer& to);

// Whether rank `from` can use rank `to`'s buffers: they are in one process, or in two processes of the
// same host and either both of `to`'s buffers lie in shared segments or `from` reads with CMA.
bool canReach(const DirectOffer& from, const DirectOffer& to);

// canReach for every ordered pair of ranks. A pure function of all offers: every rank gets the same answer.
bool directReachable(std::span<const DirectOffer> offers);
// Whether some rank reaches another's buffers only with CMA. Pure, like directReachable.
bool needsCma(std::span<const DirectOffer> offers);
// Whether some rank does not know yet whether it can use CMA: a fallback then says nothing about the next
// operation.
bool cmaUndecided(std::span<const DirectOffer> offers);

}  // namespace psdp::coll
