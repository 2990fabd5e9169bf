// Arrays of block offsets for the tasks whose blocks a BlockLayout cannot compute (coll/ring_schedule.h,
// BlockLayout::fromOffsets): the collectives with per-rank counts and the reduce. A post fills one with the
// prefix sums of its counts, the task's layout points into it, and the task gives it back when destroyed, so
// the caller's counts need not outlive the call. The first take makes as many arrays as tasks may be alive at
// once (CollParams::max_tasks), so that no later post allocates, however the destruction of completed tasks
// falls; beyond that it grows, and keeps what it made. Teams that never take one pay nothing. Thread-safe
// (posts take, the driving thread gives back).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace psdp::coll {

class BlockOffsetsPool {
 public:
  // Arrays of nblocks + 1 entries; `working_size` of them made at the first take.
  BlockOffsetsPool(int nblocks, size_t working_size)
      : entries_(static_cast<size_t>(nblocks) + 1), working_size_(working_size) {}

  // One array, lent until the lease is destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)), offsets_(std::exchange(other.offsets_, nullptr)) {}
    Lease& operator=(Lease&& other) noexcept {
      std::swap(pool_, other.pool_);
      std::swap(offsets_, other.offsets_);
      return *this;
    }
    ~Lease() {
      if (pool_ != nullptr) pool_->give(offsets_);
    }
    size_t* data() const { return offsets_; }

   private:
    friend class BlockOffsetsPool;
    Lease(BlockOffsetsPool* pool, size_t* offsets) : pool_(pool), offsets_(offsets) {}
    BlockOffsetsPool* pool_ = nullptr;
    size_t* offsets_ = nullptr;
  };

  Lease take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) {
      const size_t made = arrays_.empty() ? std::max<size_t>(1, working_size_) : 1;
      arrays_.reserve(arrays_.size() + made);
      free_.reserve(arrays_.size() + made);  // so that give() never allocates
      for (size_t i = 0; i < made; ++i) {
        arrays_.push_back(std::make_unique<size_t[]>(entries_));
        free_.push_back(arrays_.back().get());
      }
    }
    size_t* offsets = free_.back();
    free_.pop_back();
    return Lease(this, offsets);
  }

 private:
  void give(size_t* offsets) {
    std::lock_guard lock(mutex_);
    free_.push_back(offsets);
  }

  size_t entries_;
  size_t working_size_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<size_t[]>> arrays_;  // GUARDED_BY(mutex_)
  std::vector<size_t*> free_;                      // GUARDED_BY(mutex_)
};

}  // namespace psdp::coll
