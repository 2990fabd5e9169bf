// The host buffers psdp-perf measures with: mapped once at the largest size and written through before
// anything is timed, so no timed call takes a first-touch page fault (about 0.3 GB/s on some VMs).
#pragma once

#include <cstddef>
#include <string>

namespace psdp::perf {

class HostBuffer {
 public:
  // `bytes` of zeroed memory, 2 MiB aligned. With `huge_pages`, transparent huge pages are requested
  // (madvise), as frameworks' host allocators do for large tensors (PyTorch's THP_MEM_ALLOC_ENABLE); the
  // kernel may still give small pages. With `shared`, the memory comes from psdp_mem_alloc instead (page
  // aligned), which lets psdp's direct collectives reach it from the other ranks. Returns an empty buffer
  // (data() == nullptr) when the memory cannot be had.
  HostBuffer(size_t bytes, bool huge_pages, bool shared);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  char* data() const { return data_; }

 private:
  void* mapping_ = nullptr;  // what mmap returned; data_ is its first 2 MiB boundary
  bool shared_ = false;      // data_ is from psdp_mem_alloc
  size_t mapped_ = 0;
  char* data_ = nullptr;
};

// The system's transparent huge page mode (always, madvise or never: the bracketed word of
// /sys/kernel/mm/transparent_hugepage/enabled), or "unknown". Under "always" small-page buffers get huge
// pages too, so every table names it.
std::string transparentHugePageMode();

}  // namespace psdp::perf
