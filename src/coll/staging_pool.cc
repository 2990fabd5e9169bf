#include "coll/staging_pool.h"

#include <cerrno>
#include <cstring>

namespace psdp::coll {
namespace {

constexpr size_t kSlotAlign = 64;  // a cache line: fragments start aligned for the vectorised kernels
constexpr size_t kPageBytes = 4096;

size_t roundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

Result<StagingPool> StagingPool::create(size_t slot_bytes, int slots) {
  if (slot_bytes == 0 || slots <= 0) {
    return Status::invalidArgument("staging pool of {} slots of {} bytes", slots, slot_bytes);
  }
  size_t stride = roundUp(slot_bytes, kSlotAlign);
  // aligned_alloc wants a size that is a multiple of the alignment.
  size_t total = roundUp(stride * static_cast<size_t>(slots), kPageBytes);
  auto* memory = static_cast<std::byte*>(std::aligned_alloc(kPageBytes, total));
  if (memory == nullptr) return Status::fromErrno(ENOMEM, "cannot allocate collective staging memory");
  // Touch every page now, while nobody waits, rather than on the first fragment of an operation.
  std::memset(memory, 0, total);
  return StagingPool(std::unique_ptr<std::byte, Free>(memory), slot_bytes, stride, slots);
}

}  // namespace psdp::coll
