// Host memory that other processes of the same host can map: the buffers of psdp_mem_alloc. Each
// allocation is its own memfd, mapped shared and populated at once, so the first touch of its pages (slow on
// some VMs) is paid by the allocation, never by an operation. A peer maps it through /proc/<pid>/fd/<fd>
// (peer_segment_map.h), which the kernel allows to a process that may ptrace-read the owner: the rule CMA's
// process_vm_readv, and so UCX's shared-memory rendezvous, already depends on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/status.h"

namespace psdp::transport {

// Where a range of a shared segment lies, as a peer needs it to map the segment.
struct SegmentRef {
  uint64_t id = 0;      // unique within the owning process, never reused; random from process to process
  int32_t fd = -1;      // the owner's descriptor of the segment's memfd
  uint64_t bytes = 0;   // the whole segment
  uint64_t offset = 0;  // of the range, from the start of the segment
};

// A new segment of at least `bytes` (rounded up to whole pages; to whole 2 MiB from 2 MiB up), written
// once. Errors: invalid argument (0 bytes); system (memfd_create, ftruncate or mmap failed: out
// of memory, or of file descriptors). Thread-safe, like the two below.
Result<void*> allocateSharedSegment(size_t bytes);

// Unmaps a segment and closes its memfd. Peers that mapped it keep its pages until they drop their mapping.
// Errors: invalid argument (`ptr` is not what allocateSharedSegment returned, or was freed already).
Status freeSharedSegment(void* ptr);

// The segment holding all of [ptr, ptr + bytes), if there is one (bytes may be 0).
std::optional<SegmentRef> findSharedSegment(const void* ptr, size_t bytes);

}  // namespace psdp::transport
