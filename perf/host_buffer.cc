#include "host_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>

namespace psdp::perf {
namespace {

constexpr size_t kHugePageBytes = size_t{2} << 20;

}  // namespace

HostBuffer::HostBuffer(size_t bytes, bool huge_pages) {
  // Over-map by one huge page and start at the first 2 MiB boundary, so that huge pages can back all of it.
  size_t mapped = bytes + kHugePageBytes;
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return;
  mapping_ = base;
  mapped_ = mapped;
  auto address = reinterpret_cast<uintptr_t>(base);
  auto aligned = (address + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  data_ = static_cast<char*>(base) + (aligned - address);
  // Advice only: a kernel without THP leaves small pages, and the numbers say so.
  if (huge_pages) (void)madvise(data_, bytes, MADV_HUGEPAGE);
  std::memset(data_, 0, bytes);
}

HostBuffer::~HostBuffer() {
  if (mapping_ != nullptr) (void)munmap(mapping_, mapped_);
}

}  // namespace psdp::perf
