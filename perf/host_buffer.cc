#include "host_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <fstream>

#include <psdp/psdp.h>

namespace psdp::perf {
namespace {

constexpr size_t kHugePageBytes = size_t{2} << 20;

}  // namespace

HostBuffer::HostBuffer(size_t bytes, bool huge_pages, bool shared) {
  if (shared) {
    void* data = nullptr;
    if (psdp_mem_alloc(&data, bytes) != PSDP_SUCCESS) return;
    data_ = static_cast<char*>(data);
    shared_ = true;
    return;  // allocated and zeroed, every page, by psdp_mem_alloc
  }
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
  if (shared_) (void)psdp_mem_free(data_);
  if (mapping_ != nullptr) (void)munmap(mapping_, mapped_);
}

std::string transparentHugePageMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(in, line)) return "unknown";
  const size_t open = line.find('[');
  const size_t close = line.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return "unknown";
  return line.substr(open + 1, close - open - 1);
}

}  // namespace psdp::perf
