#include "transport/peer_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "transport/cross_memory.h"
#include "transport/peer_segment_map.h"
#include "transport/process_identity.h"
#include "transport/shared_segment.h"

namespace psdp::transport {
namespace {

// Peers' segments kept mapped: enough for the buffers of many operations in turn (a framework's buckets),
// few enough that segments their owners have freed do not pin much memory here for long.
constexpr size_t kMinCachedSegments = 64;

// Two ranks in one process address each other's memory as it is. Only with the namespace and boot known:
// two containers' pid 1 must not pass for one process.
bool sameProcess(const ProcessIdentity& a, const ProcessIdentity& b) {
  static constexpr std::array<uint8_t, 16> kUnknown{};
  return a.pid == b.pid && a.pid_namespace != 0 && a.pid_namespace == b.pid_namespace && a.boot_id != kUnknown &&
         a.boot_id == b.boot_id;
}

template <typename T>
void put(std::span<std::byte, MemoryHandle::kEncodedBytes> out, size_t& at, const T& value) {
  std::memcpy(out.data() + at, &value, sizeof(T));
  at += sizeof(T);
}

template <typename T>
T get(std::span<const std::byte> in, size_t& at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof(T));
  at += sizeof(T);
  return value;
}

}  // namespace

Result<void*> allocateShareableMemory(size_t bytes) {
  return allocateSharedSegment(bytes);
}

Status freeShareableMemory(void* ptr) {
  return freeSharedSegment(ptr);
}

// ---- MemoryHandle ----------------------------------------------------------------------------------------

MemoryHandle MemoryHandle::of(const void* ptr, size_t bytes) {
  MemoryHandle handle;
  handle.address_ = reinterpret_cast<uintptr_t>(ptr);
  handle.bytes_ = bytes;
  if (bytes == 0) {
    handle.shareable_ = true;
    return handle;
  }
  if (std::optional<SegmentRef> segment = findSharedSegment(ptr, bytes)) {
    handle.shareable_ = true;
    handle.segment_fd_ = segment->fd;
    handle.segment_id_ = segment->id;
    handle.segment_bytes_ = segment->bytes;
    handle.segment_offset_ = segment->offset;
  }
  return handle;
}

void MemoryHandle::encode(std::span<std::byte, kEncodedBytes> out) const {
  size_t at = 0;
  put(out, at, address_);
  put(out, at, bytes_);
  put(out, at, static_cast<uint32_t>(shareable_ ? 1 : 0));
  put(out, at, segment_fd_);
  put(out, at, segment_id_);
  put(out, at, segment_bytes_);
  put(out, at, segment_offset_);
}

Result<MemoryHandle> MemoryHandle::decode(std::span<const std::byte> in) {
  if (in.size() < kEncodedBytes) {
    return Status::mismatch("a memory handle of {} bytes, {} expected", in.size(), kEncodedBytes);
  }
  MemoryHandle handle;
  size_t at = 0;
  handle.address_ = get<uint64_t>(in, at);
  handle.bytes_ = get<uint64_t>(in, at);
  handle.shareable_ = get<uint32_t>(in, at) != 0;
  handle.segment_fd_ = get<int32_t>(in, at);
  handle.segment_id_ = get<uint64_t>(in, at);
  handle.segment_bytes_ = get<uint64_t>(in, at);
  handle.segment_offset_ = get<uint64_t>(in, at);
  return handle;
}

// ---- PeerMemory ------------------------------------------------------------------------------------------

PeerMemory::PeerMemory(std::vector<ProcessIdentity> processes, int rank)
    : processes_(std::move(processes)),
      rank_(rank),
      read_verified_(processes_.size(), false),
      segments_(std::make_unique<PeerSegmentMap>(std::max(kMinCachedSegments, 4 * processes_.size()))) {}

PeerMemory::~PeerMemory() = default;

int PeerMemory::size() const {
  return static_cast<int>(processes_.size());
}

// Unknown identities (all zero but the pid) never pass for one process, nor for one host: every pair of
// distinct ranks is then elsewhere.
std::unique_ptr<PeerMemory> PeerMemory::isolated(int nranks, int rank) {
  std::vector<ProcessIdentity> processes(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) processes[static_cast<size_t>(r)].pid = static_cast<uint32_t>(r + 1);
  return std::make_unique<PeerMemory>(std::move(processes), rank);
}

PeerPlace PeerMemory::place(int from, int to) const {
  if (from == to) return PeerPlace::kSameProcess;
  const ProcessIdentity& a = processes_[static_cast<size_t>(from)];
  const ProcessIdentity& b = processes_[static_cast<size_t>(to)];
  if (sameProcess(a, b)) return PeerPlace::kSameProcess;
  return a.isOtherLocalProcess(b) ? PeerPlace::kSameHost : PeerPlace::kElsewhere;
}

std::unique_ptr<PeerMemory> PeerMemory::subset(const std::vector<int>& members, int rank) const {
  std::vector<ProcessIdentity> processes;
  processes.reserve(members.size());
  for (int member : members) processes.push_back(processes_[static_cast<size_t>(member)]);
  return std::make_unique<PeerMemory>(std::move(processes), rank);
}

Result<std::byte*> PeerMemory::map(int peer, const MemoryHandle& handle) {
  SegmentRef ref{handle.segment_id_, handle.segment_fd_, handle.segment_bytes_, handle.segment_offset_};
  Result<std::byte*> mapped = segments_->map(processes_[static_cast<size_t>(peer)], ref, handle.bytes_);
  if (!mapped.isOk()) return mapped.status().withContext(fmt::format("rank {}", peer));
  return mapped;
}

size_t PeerMemory::mapped() const {
  return segments_->mapped();
}

// A peer that died leaves no process to read: that is the peer's failure, not this rank's.
Status PeerMemory::read(int peer, uint64_t address, void* local, size_t bytes) const {
  const uint32_t pid = processes_[static_cast<size_t>(peer)].pid;
  int failed_errno = 0;
  Status status = readProcessMemory(pid, address, local, bytes, &failed_errno);
  if (status.isOk()) return status;
  if (failed_errno == ESRCH) {
    return Status::remote("peer {} failed: its process (pid {} on this host) is gone: {}", peer, pid, status.message());
  }
  return status.withContext(fmt::format("rank {}", peer));
}

// Peers in this process need no reads, and peers of other hosts or pid namespaces cannot be read: only the
// other processes of the host are left to find out about.
ReadAccess PeerMemory::readAccess() const {
  if (!read_failure_.isOk()) return ReadAccess::kNo;
  for (int r = 0; r < size(); ++r) {
    if (!read_verified_[static_cast<size_t>(r)] && place(rank_, r) == PeerPlace::kSameHost) {
      return ReadAccess::kUnknown;
    }
  }
  return ReadAccess::kYes;
}

void PeerMemory::probeRead(int peer, uint64_t address) {
  if (!read_failure_.isOk() || read_verified_[static_cast<size_t>(peer)]) return;
  std::byte probe{};
  Status status = read(peer, address, &probe, 1);
  if (!status.isOk()) {
    read_failure_ = status;
    return;
  }
  read_verified_[static_cast<size_t>(peer)] = true;
}

}  // namespace psdp::transport
