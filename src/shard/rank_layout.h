// Which ranks form each shard group and each replica group. The communicator decides it (contiguous
// blocks of G ranks by default, a topology-chosen permutation when the mapper is active); the planner
// only needs the mapping between a rank and its (replica index, group member) position.
#pragma once

#include <vector>

namespace psdp::shard {

struct RankPosition {
  int replica = 0;  // k: which shard group the rank is in, and so its index within its replica group
  int member = 0;   // g: its index within its shard group, and so which group piece it owns
};

class RankLayout {
 public:
  // REQUIRES: group_size divides world_size; `permutation` is empty or a permutation of [0, world_size)
  // (checkPlanInput checks both).
  RankLayout(int world_size, int group_size, std::vector<int> permutation);

  int worldSize() const { return static_cast<int>(ranks_.size()); }
  int groupSize() const { return group_size_; }
  int replicas() const { return worldSize() / group_size_; }

  RankPosition position(int rank) const { return positions_[rank]; }
  int rankAt(int replica, int member) const { return ranks_[replica * group_size_ + member]; }
  // The permutation itself: shard group k is entries k*G .. k*G+G-1.
  const std::vector<int>& ranks() const { return ranks_; }

 private:
  int group_size_;
  std::vector<int> ranks_;
  std::vector<RankPosition> positions_;
};

}  // namespace psdp::shard
