#include "transport/shared_segment.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <utility>

#include "base/raii.h"

namespace psdp::transport {
namespace {

struct Segment {
  uint64_t id;
  UniqueFd fd;
  UniqueMapping memory;
};

// Segments by start address. Leaked on purpose: a buffer may be freed by a static destructor of the
// application after this translation unit's statics are gone.
class SegmentTable {
 public:
  static SegmentTable& instance() {
    static SegmentTable* table = new SegmentTable;
    return *table;
  }

  uint64_t add(UniqueFd fd, UniqueMapping memory) {
    std::lock_guard lock(mutex_);
    uint64_t id = ++last_id_;
    std::byte* base = memory.data();
    segments_.emplace(base, Segment{id, std::move(fd), std::move(memory)});
    return id;
  }

  // The segment's owners leave the table with it: the caller unmaps and closes it by dropping it.
  std::optional<Segment> remove(std::byte* base) {
    std::lock_guard lock(mutex_);
    auto it = segments_.find(base);
    if (it == segments_.end()) return std::nullopt;
    Segment segment = std::move(it->second);
    segments_.erase(it);
    return segment;
  }

  std::optional<SegmentRef> find(const std::byte* ptr, size_t bytes) const {
    std::lock_guard lock(mutex_);
    auto it = segments_.upper_bound(ptr);
    if (it == segments_.begin()) return std::nullopt;
    --it;
    const std::byte* base = it->first;
    const Segment& segment = it->second;
    size_t offset = static_cast<size_t>(ptr - base);
    const size_t size = segment.memory.size();
    if (offset > size || bytes > size - offset) return std::nullopt;
    return SegmentRef{segment.id, segment.fd.get(), size, offset};
  }

 private:
  mutable std::mutex mutex_;
  std::map<const std::byte*, Segment, std::less<>> segments_;  // GUARDED_BY(mutex_)
  // Ids count up from a random start, so that a later process that reuses this one's pid does not name
  // its segments as this one did (peers cache mappings by pid and id).
  uint64_t last_id_ = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);  // GUARDED_BY(mutex_)
};

constexpr size_t kHugePage = size_t{2} << 20;

size_t roundUp(size_t bytes, size_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

}  // namespace

Result<void*> allocateSharedSegment(size_t bytes) {
  if (bytes == 0) return Status::invalidArgument("a shared segment of 0 bytes");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (bytes > SIZE_MAX - kHugePage) return Status::invalidArgument("a shared segment of {} bytes", bytes);
  // Whole huge pages from 2 MiB up, so that shmem huge pages (where the system enables them) can back it.
  const size_t size = roundUp(bytes, bytes >= kHugePage ? kHugePage : page);
  UniqueFd fd(memfd_create("psdp-shared-buffer", MFD_CLOEXEC));
  if (!fd.valid()) return Status::fromErrno(errno, "memfd_create for a shared buffer");
  if (ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    return Status::fromErrno(errno, fmt::format("sizing a shared buffer of {} bytes", size));
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) return Status::fromErrno(errno, fmt::format("mapping a shared buffer of {} bytes", size));
  UniqueMapping memory(base, size);
  // Advice before the first touch, so that the pages can be huge where shmem huge pages are enabled; then
  // every page is touched now, not by an operation.
  if (size >= kHugePage) madvise(base, size, MADV_HUGEPAGE);
  std::memset(base, 0, size);
  SegmentTable::instance().add(std::move(fd), std::move(memory));
  return base;
}

Status freeSharedSegment(void* ptr) {
  std::optional<Segment> segment = SegmentTable::instance().remove(static_cast<std::byte*>(ptr));
  if (!segment) return Status::invalidArgument("{} is not a live buffer of psdp_mem_alloc", ptr);
  return Status::ok();  // dropping it unmaps and closes it
}

std::optional<SegmentRef> findSharedSegment(const void* ptr, size_t bytes) {
  return SegmentTable::instance().find(static_cast<const std::byte*>(ptr), bytes);
}

}  // namespace psdp::transport
