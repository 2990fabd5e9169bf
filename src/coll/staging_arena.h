// The staging memory of one communicator's collectives, shared by the operations that run at once: one block,
// allocated and touched once at creation so that no operation allocates or takes a first-touch page fault
// (on the target VMs first touch runs at ~0.3 GB/s, slower than the network).
//
// Operations take their slots in sequence order: operation s claims (or passes, when it needs none) only
// after every operation before it has. Memory therefore goes to earlier operations first on every rank, and
// an operation never waits for memory held by a later one: since each completes without any later one, no
// set of operations spread over ranks can wait for each other. Claims are laid out one after the other
// around the block (a ring), and space returns to it when the oldest claims are released; a claim that does
// not fit waits, which is the back-pressure on operations in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "base/status.h"

namespace psdp::coll {

// The staging slots of one operation: `slots` buffers of `slot_bytes` each, 64-byte aligned.
struct StagingSlots {
  std::byte* base = nullptr;
  size_t slot_bytes = 0;
  int slots = 0;

  // REQUIRES: 0 <= index < slots.
  std::byte* slot(int index) const { return base + static_cast<size_t>(index) * slot_bytes; }
};

class StagingArena {
 public:
  // A block of at least `bytes`, 64-byte aligned, for at most `max_claims` claims alive at once (the
  // operations that may run at once). Errors: invalid argument (0 bytes or claims), system (out of memory).
  static Result<StagingArena> create(size_t bytes, int max_claims);

  size_t capacity() const { return capacity_; }
  // Slots of at least this many bytes always fit an empty arena.
  static size_t slotStride(size_t slot_bytes);

  // Operation `seq` claims `slots` slots of `slot_bytes`: the slots, or nullopt while an earlier operation has
  // not claimed or passed yet, or while the memory (or every claim) is held by earlier ones. Invalid argument
  // when the claim could never fit (more than capacity()). REQUIRES: the operations before `seq` all claim or
  // pass.
  Result<std::optional<StagingSlots>> claim(uint32_t seq, int slots, size_t slot_bytes);
  // Operation `seq` needs no staging: false while it is not its turn yet.
  bool pass(uint32_t seq);
  // Returns the claim of `seq` (nothing if it made none). Space comes back in claim order.
  void release(uint32_t seq);
  // Whether `seq` may claim or pass now.
  bool isTurnOf(uint32_t seq) const { return seq == turn_; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  struct Claim {
    uint32_t seq;
    size_t offset;
    size_t bytes;
    bool released;
  };
  StagingArena(std::unique_ptr<std::byte, Free> memory, size_t capacity, int max_claims)
      : memory_(std::move(memory)), capacity_(capacity), claims_(static_cast<size_t>(max_claims)) {}
  Claim& claimAt(size_t index) { return claims_[(oldest_ + index) % claims_.size()]; }
  // Where `bytes` fit now, if they do.
  std::optional<size_t> place(size_t bytes) const;

  std::unique_ptr<std::byte, Free> memory_;
  size_t capacity_;
  uint32_t turn_ = 0;          // the sequence number that claims or passes next
  size_t head_ = 0;            // where the newest claim ends
  std::vector<Claim> claims_;  // a ring of the live claims in claim order: count_ of them from oldest_
  size_t oldest_ = 0;
  size_t count_ = 0;
};

}  // namespace psdp::coll
