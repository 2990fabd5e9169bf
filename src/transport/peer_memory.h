// Peer memory: how a rank touches the host memory of the other ranks of its host without sending messages,
// beside the transport's point-to-point operations. Where each peer runs is decided once, at connect, from
// the process identities that travel with the transport's addresses (as NCCL's transports decide per peer
// whether they can connect): in this process (its buffers are addressable as they are), in another process
// of this host (its shareable memory can be mapped here, and any of its memory read once reads are known to
// work), or elsewhere. Every rank learns every rank's identity, so every rank answers place(from, to) alike
// for any pair.
//
// The mechanisms stay inside transport/: shareable memory is a memfd per allocation (shared_segment.h),
// mapped by peers through /proc (peer_segment_map.h), and reads are CMA (cross_memory.h). Both need the
// permission ptrace-read needs, as UCX's shared-memory rendezvous does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"

namespace psdp::transport {

class PeerSegmentMap;
struct ProcessIdentity;

// Memory that other processes of this host can map (psdp_mem_alloc, the engine's pack buffers): at least
// `bytes` (rounded up to whole pages; to whole 2 MiB from 2 MiB up), populated at once so that no operation
// pays the first touch of its pages. Errors: invalid argument (0 bytes); system (out of memory or of file
// descriptors). Thread-safe, like freeShareableMemory.
Result<void*> allocateShareableMemory(size_t bytes);
// Errors: invalid argument (`ptr` is not what allocateShareableMemory returned, or was freed already).
// Peers that mapped it keep its pages until they drop their mapping.
Status freeShareableMemory(void* ptr);

// Where a peer's process runs, seen from another rank's.
enum class PeerPlace : uint8_t { kElsewhere = 0, kSameHost = 1, kSameProcess = 2 };

// What a rank knows of reading the memory of the other processes of its host: unknown until one read of
// each has worked (or one has failed).
enum class ReadAccess : uint32_t { kNo = 0, kUnknown = 1, kYes = 2 };

// A range of this process's memory as its peers need it: its address (for a peer in this process, or one
// that reads it) and, when the whole range lies in shareable memory, where a peer maps it from. Fixed-size
// on the wire.
class MemoryHandle {
 public:
  static constexpr size_t kEncodedBytes = 48;
  using Encoded = std::array<std::byte, kEncodedBytes>;

  MemoryHandle() = default;
  // Describes [ptr, ptr + bytes) of this process. An empty range counts as shareable: nothing of it is
  // ever touched.
  static MemoryHandle of(const void* ptr, size_t bytes);

  uint64_t address() const { return address_; }
  uint64_t bytes() const { return bytes_; }
  bool shareable() const { return shareable_; }

  void encode(std::span<std::byte, kEncodedBytes> out) const;
  // Reads kEncodedBytes from the front of `in`. Errors: mismatch (too short).
  static Result<MemoryHandle> decode(std::span<const std::byte> in);

 private:
  friend class PeerMemory;
  uint64_t address_ = 0;
  uint64_t bytes_ = 0;
  bool shareable_ = false;
  // The shareable segment holding the range: its id and descriptor in the owner, its size, the range's
  // offset in it.
  int32_t segment_fd_ = -1;
  uint64_t segment_id_ = 0;
  uint64_t segment_bytes_ = 0;
  uint64_t segment_offset_ = 0;
};

// One rank's peer memory over a set of ranks (a transport's, or a team's: ranks are the set's). Each user
// gets its own from Transport::openPeerMemory: the mappings it makes are cached for it alone. Not
// thread-safe, except place() and read(), which may be called from any thread.
class PeerMemory {
 public:
  // processes[r]: rank r's identity (this rank's included), as connect learnt them.
  PeerMemory(std::vector<ProcessIdentity> processes, int rank);
  // Every peer elsewhere: for a backend that moves no host memory.
  static std::unique_ptr<PeerMemory> isolated(int nranks, int rank);
  ~PeerMemory();
  PeerMemory(const PeerMemory&) = delete;
  PeerMemory& operator=(const PeerMemory&) = delete;

  int rank() const { return rank_; }
  int size() const;

  // Where `to` runs seen from `from` (kSameProcess for from == to). The same answer on every rank.
  PeerPlace place(int from, int to) const;
  // The same peer memory over a subset: members[i] is this set's rank of the subset's rank i, `rank` this
  // process's rank in the subset.
  std::unique_ptr<PeerMemory> subset(const std::vector<int>& members, int rank) const;

  // The address here of the range `handle` describes in `peer`'s memory. REQUIRES: place(rank(), peer) is
  // kSameHost and handle.shareable(). Errors: system naming the rank (the memory cannot be opened, e.g. no
  // permission, or mapped); mismatch (the segment is smaller than the peer said).
  Result<std::byte*> map(int peer, const MemoryHandle& handle);
  // Mappings kept (the least recently used one is dropped first once `capacity` are).
  size_t mapped() const;

  // Copies `bytes` at `address` in `peer`'s process to `local`. REQUIRES: place(rank(), peer) is kSameHost.
  // Errors: remote (the peer's process is gone, naming its rank); system naming the rank (no permission,
  // or the range is not mapped there).
  Status read(int peer, uint64_t address, void* local, size_t bytes) const;

  // Reads: kYes once a read of every other process of the host in the set has worked, kNo after the first
  // failure (reads are then never tried again), kUnknown until then.
  ReadAccess readAccess() const;
  // Tries one byte at `address` of `peer` (an address the peer has offered) unless its process was read
  // already; a failure is recorded in readFailure() and makes readAccess() kNo.
  void probeRead(int peer, uint64_t address);
  const Status& readFailure() const { return read_failure_; }

 private:
  std::vector<ProcessIdentity> processes_;
  int rank_;
  std::vector<bool> read_verified_;
  Status read_failure_;
  std::unique_ptr<PeerSegmentMap> segments_;
};

}  // namespace psdp::transport
