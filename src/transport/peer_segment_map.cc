#include "transport/peer_segment_map.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include "base/raii.h"

namespace psdp::transport {

Result<std::byte*> PeerSegmentMap::map(const ProcessIdentity& owner, const SegmentRef& ref, size_t bytes) {
  if (ref.offset > ref.bytes || bytes > ref.bytes - ref.offset) {
    return Status::mismatch("range of {} bytes at offset {} of a shared segment of {} bytes of pid {}", bytes,
                            ref.offset, ref.bytes, owner.pid);
  }
  ++clock_;
  for (Mapping& mapping : mappings_) {
    if (mapping.pid == owner.pid && mapping.id == ref.id) {
      if (ref.bytes > mapping.memory.size()) {
        return Status::mismatch("shared segment {} of pid {} is {} bytes, not {}", ref.id, owner.pid,
                                mapping.memory.size(), ref.bytes);
      }
      mapping.last_use = clock_;
      return mapping.memory.data() + ref.offset;
    }
  }
  PSDP_ASSIGN_OR_RETURN(Mapping mapping, open(owner, ref));
  if (mappings_.size() >= capacity_) evictOldest();
  std::byte* base = mapping.memory.data();
  mappings_.push_back(std::move(mapping));
  return base + ref.offset;
}

Result<PeerSegmentMap::Mapping> PeerSegmentMap::open(const ProcessIdentity& owner, const SegmentRef& ref) const {
  std::string path = "/proc/" + std::to_string(owner.pid) + "/fd/" + std::to_string(ref.fd);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid())
    return Status::fromErrno(errno, fmt::format("opening pid {}'s shared buffer at {}", owner.pid, path));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return Status::fromErrno(errno, fmt::format("fstat of {}", path));
  // The descriptor could have been closed and reused for another file since the owner named it; only a
  // segment at least as large as it said is accepted.
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) < ref.bytes) {
    return Status::mismatch("{} is {} bytes, but pid {} named a shared segment of {} bytes there", path, st.st_size,
                            owner.pid, ref.bytes);
  }
  size_t bytes = static_cast<size_t>(ref.bytes);
  // MAP_POPULATE builds the page tables now: the pages exist already, and faulting them in one by one
  // inside the first operation would slow it down several times.
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
  if (base == MAP_FAILED) return Status::fromErrno(errno, fmt::format("mapping {} ({} bytes)", path, bytes));
  return Mapping{owner.pid, ref.id, UniqueMapping(base, bytes), clock_};
}

void PeerSegmentMap::evictOldest() {
  auto oldest = std::min_element(mappings_.begin(), mappings_.end(),
                                 [](const Mapping& a, const Mapping& b) { return a.last_use < b.last_use; });
  if (oldest == mappings_.end()) return;
  mappings_.erase(oldest);
}

}  // namespace psdp::transport
