// The pack buffers of a registered state's steps: a fixed set, made once and reused by every step, in
// memory the other ranks of the host can map (transport/peer_memory.h), so that the host provider's direct
// algorithm reaches them in place. One buffer per chunk in flight: the reduce window's for gradients, the
// gather window's for parameters. The memory is (reduce window + gather window) x the largest chunk's pack
// buffer; it is the whole cap, allocated and first touched when a step first asks for it.
#pragma once

#include <cstddef>
#include <vector>

#include "base/status.h"

namespace psdp::engine {

class PackPool {
 public:
  PackPool() = default;
  ~PackPool();
  PackPool(const PackPool&) = delete;
  PackPool& operator=(const PackPool&) = delete;

  // Makes sure `reduce` buffers of `reduce_bytes` and `gather` ones of `gather_bytes` exist (growing the pool
  // when a step asks for more). Errors: system (out of memory). REQUIRES: no buffer is taken.
  Status reserve(size_t reduce, size_t reduce_bytes, size_t gather, size_t gather_bytes);

  // A free buffer of the kind; nullptr when all are taken (the schedule's window prevents it).
  std::byte* takeReduce() { return take(reduce_); }
  std::byte* takeGather() { return take(gather_); }
  void giveBack(std::byte* buffer);

  size_t bytes() const;

 private:
  struct Buffer {
    std::byte* data = nullptr;
    size_t bytes = 0;
    bool taken = false;
  };
  static std::byte* take(std::vector<Buffer>& buffers);
  static Status grow(std::vector<Buffer>& buffers, size_t count, size_t bytes);
  static void release(std::vector<Buffer>& buffers);

  std::vector<Buffer> reduce_;
  std::vector<Buffer> gather_;
};

}  // namespace psdp::engine
