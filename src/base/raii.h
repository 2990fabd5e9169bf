// RAII owners for C handles: every UCX, NCCL, CUDA, hwloc or OS handle lives in one of these.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

#include <memory>
#include <utility>

namespace psdp {

// unique_ptr deleter that calls a C function: std::unique_ptr<hwloc_topology, FnDeleter<hwloc_topology_destroy>>.
template <auto Fn>
struct FnDeleter {
  template <typename T>
  void operator()(T* p) const {
    Fn(p);
  }
};

// Owns a file descriptor; closes it on destruction. release() gives it up.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Owns a memory mapping (mmap); unmaps it on destruction. release() gives it up.
class UniqueMapping {
 public:
  UniqueMapping() = default;
  UniqueMapping(void* base, size_t bytes) : base_(static_cast<std::byte*>(base)), bytes_(bytes) {}
  UniqueMapping(UniqueMapping&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  UniqueMapping& operator=(UniqueMapping&& other) noexcept {
    if (this != &other) {
      reset();
      base_ = std::exchange(other.base_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  UniqueMapping(const UniqueMapping&) = delete;
  UniqueMapping& operator=(const UniqueMapping&) = delete;
  ~UniqueMapping() { reset(); }

  std::byte* data() const { return base_; }
  size_t size() const { return bytes_; }
  std::byte* release() {
    bytes_ = 0;
    return std::exchange(base_, nullptr);
  }
  void reset() {
    if (base_ != nullptr) ::munmap(base_, bytes_);
    base_ = nullptr;
    bytes_ = 0;
  }

 private:
  std::byte* base_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace psdp
