// How one chunk is cut into aligned, balanced pieces: the arithmetic behind ShardPlan, kept apart so that
// it can be read (and tested) on its own.
//
// A chunk of n elements is U = ceil(n / u) units of u elements, the last unit possibly partial. Split into
// `parts`, part i gets floor(U / parts) or ceil(U / parts) whole units, the larger parts last. The partial
// unit, at the end of the chunk, then always falls into a largest part, so any two parts differ by at most
// u elements (a partial unit in a smaller part could make that 2u - 1). Nested splits (world pieces inside
// group pieces) apply the same rule to a group piece's units, which keeps the bound for the world pieces
// of the whole chunk too: their unit counts lie between floor(floor(U/G)/R) and ceil(ceil(U/G)/R), at most
// one apart, and the partial unit lands in the chunk's last, largest world piece.
#pragma once

#include <cstdint>

namespace psdp::shard {

// Units before part `index` (0 <= index <= parts) when `units` are split into `parts` as above.
constexpr uint64_t unitsBefore(uint64_t units, uint64_t parts, uint64_t index) {
  const uint64_t base = units / parts;
  const uint64_t small = parts - units % parts;  // parts with `base` units; the rest have base + 1
  return index * base + (index > small ? index - small : 0);
}

// The part that holds unit `unit` (< units).
constexpr uint64_t partOfUnit(uint64_t units, uint64_t parts, uint64_t unit) {
  const uint64_t base = units / parts;
  const uint64_t small = parts - units % parts;
  if (unit < small * base) return unit / base;  // never reached with base == 0
  return small + (unit - small * base) / (base + 1);
}

// A piece of a chunk, in elements relative to the chunk's first element.
struct Extent {
  uint64_t begin = 0;
  uint64_t count = 0;
};

class PieceSplit {
 public:
  // REQUIRES: count > 0, unit > 0, group_size > 0, replicas > 0.
  constexpr PieceSplit(uint64_t count, uint64_t unit, uint64_t group_size, uint64_t replicas)
      : count_(count), unit_(unit), units_((count + unit - 1) / unit), group_size_(group_size), replicas_(replicas) {}

  // Group piece of member g (< group_size).
  constexpr Extent groupPiece(uint64_t g) const {
    return toElements(unitsBefore(units_, group_size_, g), unitsBefore(units_, group_size_, g + 1));
  }
  // World piece of replica k (< replicas) inside the group piece of member g.
  constexpr Extent worldPiece(uint64_t g, uint64_t k) const {
    const uint64_t first = unitsBefore(units_, group_size_, g);
    const uint64_t units = unitsBefore(units_, group_size_, g + 1) - first;
    return toElements(first + unitsBefore(units, replicas_, k), first + unitsBefore(units, replicas_, k + 1));
  }
  // The member whose group piece holds chunk-relative element x (< count).
  constexpr uint64_t memberAt(uint64_t x) const { return partOfUnit(units_, group_size_, x / unit_); }
  // The replica whose world piece inside member g's group piece holds x (which that group piece holds).
  constexpr uint64_t replicaAt(uint64_t g, uint64_t x) const {
    const uint64_t first = unitsBefore(units_, group_size_, g);
    const uint64_t units = unitsBefore(units_, group_size_, g + 1) - first;
    return partOfUnit(units, replicas_, x / unit_ - first);
  }
  // Whole units of the largest group piece and of the largest world piece.
  constexpr uint64_t maxGroupUnits() const { return (units_ + group_size_ - 1) / group_size_; }
  constexpr uint64_t maxWorldUnits() const { return (maxGroupUnits() + replicas_ - 1) / replicas_; }

 private:
  constexpr Extent toElements(uint64_t first_unit, uint64_t end_unit) const {
    const uint64_t begin = first_unit * unit_ < count_ ? first_unit * unit_ : count_;
    const uint64_t end = end_unit * unit_ < count_ ? end_unit * unit_ : count_;
    return Extent{begin, end - begin};
  }

  uint64_t count_;
  uint64_t unit_;
  uint64_t units_;
  uint64_t group_size_;
  uint64_t replicas_;
};

}  // namespace psdp::shard
