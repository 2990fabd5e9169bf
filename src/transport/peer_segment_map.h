// Other processes' shared segments (shared_segment.h) mapped into this one, cached: the first operation
// that uses a peer's buffer maps its segment, later ones find it here. A peer that frees a segment does
// not tell anyone; its pages live on until the mapping here is dropped, so at most `capacity` mappings are
// kept and the least recently used one is unmapped first. Segment ids are never reused by their process and
// start at random, so a stale mapping is not mistaken for a new segment, not even of a later process that
// got the same pid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/raii.h"
#include "base/status.h"
#include "transport/process_identity.h"
#include "transport/shared_segment.h"

namespace psdp::transport {

class PeerSegmentMap {
 public:
  explicit PeerSegmentMap(size_t capacity) : capacity_(capacity) {}
  PeerSegmentMap(const PeerSegmentMap&) = delete;
  PeerSegmentMap& operator=(const PeerSegmentMap&) = delete;

  // The address here of the range `ref` names in `owner`'s segment, `bytes` long. REQUIRES: `owner` is
  // another process of this host (ProcessIdentity::isOtherLocalProcess). Errors: system (the segment
  // cannot be opened, e.g. no ptrace-read permission on the owner, or mapped); mismatch (the segment is
  // smaller than the owner said, or the range does not fit it). Not thread-safe.
  Result<std::byte*> map(const ProcessIdentity& owner, const SegmentRef& ref, size_t bytes);

  size_t mapped() const { return mappings_.size(); }

 private:
  struct Mapping {
    uint32_t pid;
    uint64_t id;
    UniqueMapping memory;
    uint64_t last_use;
  };

  Result<Mapping> open(const ProcessIdentity& owner, const SegmentRef& ref) const;
  void evictOldest();

  size_t capacity_;
  std::vector<Mapping> mappings_;
  uint64_t clock_ = 0;
};

}  // namespace psdp::transport
