#include "coll/direct_offer.h"

#include <algorithm>
#include <cstring>

namespace psdp::coll {
namespace {

// "PSDO" and a layout version.
constexpr uint32_t kMagic = 0x4f445350;
constexpr uint32_t kVersion = 3;
constexpr size_t kHeaderBytes = 8;
constexpr size_t kSendAt = kHeaderBytes;
constexpr size_t kRecvAt = kSendAt + transport::MemoryHandle::kEncodedBytes;
constexpr size_t kReadsAt = kRecvAt + transport::MemoryHandle::kEncodedBytes;
constexpr size_t kCmaAt = kReadsAt + sizeof(uint32_t);

static_assert(kCmaAt + sizeof(uint32_t) <= kDirectOfferBytes);

using transport::PeerPlace;

}  // namespace

DirectOfferBytes encodeDirectOffer(const DirectOffer& offer) {
  DirectOfferBytes out{};
  std::memcpy(out.data(), &kMagic, sizeof(kMagic));
  std::memcpy(out.data() + sizeof(kMagic), &kVersion, sizeof(kVersion));
  offer.send.encode(std::span<std::byte, transport::MemoryHandle::kEncodedBytes>(
      out.data() + kSendAt, transport::MemoryHandle::kEncodedBytes));
  offer.recv.encode(std::span<std::byte, transport::MemoryHandle::kEncodedBytes>(
      out.data() + kRecvAt, transport::MemoryHandle::kEncodedBytes));
  const auto reads = static_cast<uint32_t>(offer.reads);
  std::memcpy(out.data() + kReadsAt, &reads, sizeof(reads));
  const uint32_t cma = offer.cma ? 1 : 0;
  std::memcpy(out.data() + kCmaAt, &cma, sizeof(cma));
  return out;
}

Result<DirectOffer> decodeDirectOffer(std::span<const std::byte> bytes) {
  if (bytes.size() != kDirectOfferBytes) {
    return Status::mismatch("a message of {} bytes where a direct offer ({} bytes) was expected", bytes.size(),
                            kDirectOfferBytes);
  }
  uint32_t magic = 0, version = 0, reads = 0, cma = 0;
  std::memcpy(&magic, bytes.data(), sizeof(magic));
  std::memcpy(&version, bytes.data() + sizeof(magic), sizeof(version));
  if (magic != kMagic || version != kVersion) {
    return Status::mismatch("a message that is not a direct offer where one was expected");
  }
  DirectOffer offer;
  PSDP_ASSIGN_OR_RETURN(offer.send, transport::MemoryHandle::decode(bytes.subspan(kSendAt)));
  PSDP_ASSIGN_OR_RETURN(offer.recv, transport::MemoryHandle::decode(bytes.subspan(kRecvAt)));
  std::memcpy(&reads, bytes.data() + kReadsAt, sizeof(reads));
  if (reads > static_cast<uint32_t>(transport::ReadAccess::kYes)) {
    return Status::mismatch("direct offer: read access {}", reads);
  }
  offer.reads = static_cast<transport::ReadAccess>(reads);
  std::memcpy(&cma, bytes.data() + kCmaAt, sizeof(cma));
  if (cma > 1) return Status::mismatch("direct offer: cma {}", cma);
  offer.cma = cma != 0;
  return offer;
}

bool mapsBuffers(const transport::PeerMemory& memory, int from, const DirectOffer& to_offer, int to) {
  return memory.place(from, to) == PeerPlace::kSameHost && to_offer.send.shareable() && to_offer.recv.shareable();
}

bool canReach(const transport::PeerMemory& memory, std::span<const DirectOffer> offers, int from, int to) {
  switch (memory.place(from, to)) {
    case PeerPlace::kSameProcess: return true;
    case PeerPlace::kElsewhere: return false;
    case PeerPlace::kSameHost:
      return mapsBuffers(memory, from, offers[static_cast<size_t>(to)], to) ||
             offers[static_cast<size_t>(from)].reads == transport::ReadAccess::kYes;
  }
  return false;
}

bool directReachable(const transport::PeerMemory& memory, std::span<const DirectOffer> offers) {
  const int n = static_cast<int>(offers.size());
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j && !canReach(memory, offers, i, j)) return false;
    }
  }
  return true;
}

bool needsPeerReads(const transport::PeerMemory& memory, std::span<const DirectOffer> offers) {
  const int n = static_cast<int>(offers.size());
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j && memory.place(i, j) != PeerPlace::kSameProcess &&
          !mapsBuffers(memory, i, offers[static_cast<size_t>(j)], j)) {
        return true;
      }
    }
  }
  return false;
}

bool everyRuleAllowsReads(std::span<const DirectOffer> offers) {
  return std::all_of(offers.begin(), offers.end(), [](const DirectOffer& o) { return o.cma; });
}

bool peerReadsUndecided(std::span<const DirectOffer> offers) {
  return std::any_of(offers.begin(), offers.end(),
                     [](const DirectOffer& o) { return o.reads == transport::ReadAccess::kUnknown; });
}

}  // namespace psdp::coll
