#include "coll/staging_pool.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

namespace psdp::coll {
namespace {

constexpr size_t kSlotAlign = 64;  // a cache line: fragments start aligned for the vectorised kernels
constexpr size_t kPageBytes = 4096;
// Transparent huge pages: the shared-memory transport copies between processes with process_vm_readv, whose
// cost per page pinned dominates on 4 KiB pages (2 MiB pages nearly doubled reduce-scatter bandwidth here).
constexpr size_t kHugePageBytes = size_t{2} << 20;

size_t roundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

Result<StagingPool> StagingPool::create(size_t slot_bytes, int slots) {
  if (slot_bytes == 0 || slots <= 0) {
    return Status::invalidArgument("staging pool of {} slots of {} bytes", slots, slot_bytes);
  }
  size_t stride = roundUp(slot_bytes, kSlotAlign);
  // aligned_alloc wants a size that is a multiple of the alignment. Pools below a huge page stay on small
  // pages rather than rounding a few KiB up to 2 MiB.
  size_t bytes = stride * static_cast<size_t>(slots);
  size_t align = bytes >= kHugePageBytes ? kHugePageBytes : kPageBytes;
  size_t total = roundUp(bytes, align);
  auto* memory = static_cast<std::byte*>(std::aligned_alloc(align, total));
  if (memory == nullptr) return Status::fromErrno(ENOMEM, "cannot allocate collective staging memory");
  // Advice only: where THP is disabled the pool works the same on small pages.
  if (align == kHugePageBytes) (void)madvise(memory, total, MADV_HUGEPAGE);
  // Touch every page now, while nobody waits, rather than on the first fragment of an operation.
  std::memset(memory, 0, total);
  return StagingPool(std::unique_ptr<std::byte, Free>(memory), slot_bytes, stride, slots);
}

}  // namespace psdp::coll
