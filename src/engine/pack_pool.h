// The pack buffers of a registered state's steps: made once and reused by every step, in memory the other
// ranks of the host can map (transport/peer_memory.h), so that the host provider's direct algorithm reaches
// them in place. One buffer per transfer in flight: the reduce window's for gradients, the gather window's
// for parameters. A step's need is (reduce window + gather window) x its largest pack buffer; the pool keeps
// what every step so far has asked for (steps that alternate configurations, pipelined and bulk, reuse
// their buffers instead of remaking them), allocated and first touched when a step first asks for it.
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

  // Makes sure at least `reduce` buffers of at least `reduce_bytes` and `gather` ones of `gather_bytes` exist,
  // adding what is missing. Errors: system (out of memory). REQUIRES: no buffer is taken.
  Status reserve(size_t reduce, size_t reduce_bytes, size_t gather, size_t gather_bytes);

  // The smallest free buffer of the kind holding `bytes`; nullptr when none is free (the schedule's window
  // and reserve() prevent it).
  std::byte* takeReduce(size_t bytes) { return take(reduce_, bytes); }
  std::byte* takeGather(size_t bytes) { return take(gather_, bytes); }
  void giveBack(std::byte* buffer);

 private:
  struct Buffer {
    std::byte* data = nullptr;
    size_t bytes = 0;
    bool taken = false;
  };
  static std::byte* take(std::vector<Buffer>& buffers, size_t bytes);
  static Status grow(std::vector<Buffer>& buffers, size_t count, size_t bytes);
  static void release(std::vector<Buffer>& buffers);

  std::vector<Buffer> reduce_;
  std::vector<Buffer> gather_;
};

}  // namespace psdp::engine
