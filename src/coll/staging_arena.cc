#include "coll/staging_arena.h"

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

Result<StagingArena> StagingArena::create(size_t bytes, int max_claims) {
  if (bytes == 0 || max_claims <= 0) {
    return Status::invalidArgument("staging arena of {} bytes for {} claims", bytes, max_claims);
  }
  // aligned_alloc wants a size that is a multiple of the alignment. Arenas below a huge page stay on small
  // pages rather than rounding a few KiB up to 2 MiB.
  size_t align = bytes >= kHugePageBytes ? kHugePageBytes : kPageBytes;
  size_t total = roundUp(bytes, align);
  auto* memory = static_cast<std::byte*>(std::aligned_alloc(align, total));
  if (memory == nullptr) return Status::fromErrno(ENOMEM, "cannot allocate collective staging memory");
  // Advice only: where THP is disabled the arena works the same on small pages.
  if (align == kHugePageBytes) (void)madvise(memory, total, MADV_HUGEPAGE);
  // Touch every page now, while nobody waits, rather than on the first fragment of an operation.
  std::memset(memory, 0, total);
  return StagingArena(std::unique_ptr<std::byte, Free>(memory), total, max_claims);
}

size_t StagingArena::slotStride(size_t slot_bytes) {
  return roundUp(slot_bytes, kSlotAlign);
}

// The claims occupy [oldest claim's offset, head_) around the ring. A new one goes at head_ if it fits
// before the end (and before the oldest claim, when the ring has wrapped), else at 0 if it fits before the
// oldest claim.
std::optional<size_t> StagingArena::place(size_t bytes) const {
  if (count_ == 0) return size_t{0};
  const size_t tail = claims_[oldest_].offset;
  if (head_ > tail) {
    if (capacity_ - head_ >= bytes) return head_;
    if (tail >= bytes) return size_t{0};
    return std::nullopt;
  }
  if (tail - head_ >= bytes) return head_;
  return std::nullopt;
}

Result<std::optional<StagingSlots>> StagingArena::claim(uint32_t seq, int slots, size_t slot_bytes) {
  if (seq != turn_) return std::optional<StagingSlots>();
  const size_t stride = slotStride(slot_bytes);
  const size_t bytes = stride * static_cast<size_t>(slots);
  if (slots <= 0 || bytes > capacity_) {
    return Status::invalidArgument("a staging claim of {} slots of {} bytes exceeds the arena's {} bytes", slots,
                                   slot_bytes, capacity_);
  }
  if (count_ == claims_.size()) return std::optional<StagingSlots>();
  std::optional<size_t> offset = place(bytes);
  if (!offset) return std::optional<StagingSlots>();
  claims_[(oldest_ + count_) % claims_.size()] = Claim{seq, *offset, bytes, false};
  ++count_;
  head_ = *offset + bytes;
  ++turn_;
  return std::optional<StagingSlots>(StagingSlots{memory_.get() + *offset, stride, slots});
}

bool StagingArena::pass(uint32_t seq) {
  if (seq != turn_) return false;
  ++turn_;
  return true;
}

void StagingArena::release(uint32_t seq) {
  for (size_t i = 0; i < count_; ++i) {
    Claim& claim = claimAt(i);
    if (claim.seq == seq) claim.released = true;
  }
  while (count_ > 0 && claims_[oldest_].released) {
    oldest_ = (oldest_ + 1) % claims_.size();
    --count_;
  }
  if (count_ == 0) head_ = 0;
}

}  // namespace psdp::coll
