// The staging memory of one communicator's collectives: fixed-size slots, allocated and touched once at
// creation so that no operation allocates or takes a first-touch page fault (on the target VMs first touch
// runs at ~0.3 GB/s, slower than the network).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

#include "base/status.h"

namespace psdp::coll {

class StagingPool {
 public:
  // `slots` buffers of at least `slot_bytes` each, every one 64-byte aligned. Errors: system (out of memory),
  // invalid argument (zero slots or bytes).
  static Result<StagingPool> create(size_t slot_bytes, int slots);

  // REQUIRES: 0 <= index < slots().
  std::byte* slot(int index) const { return memory_.get() + static_cast<size_t>(index) * stride_; }
  int slots() const { return slots_; }
  size_t slotBytes() const { return slot_bytes_; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  StagingPool(std::unique_ptr<std::byte, Free> memory, size_t slot_bytes, size_t stride, int slots)
      : memory_(std::move(memory)), slot_bytes_(slot_bytes), stride_(stride), slots_(slots) {}

  std::unique_ptr<std::byte, Free> memory_;
  size_t slot_bytes_;
  size_t stride_;
  int slots_;
};

}  // namespace psdp::coll
