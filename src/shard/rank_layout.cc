#include "shard/rank_layout.h"

#include <numeric>

namespace psdp::shard {

RankLayout::RankLayout(int world_size, int group_size, std::vector<int> permutation)
    : group_size_(group_size), ranks_(std::move(permutation)) {
  if (ranks_.empty()) {
    ranks_.resize(world_size);
    std::iota(ranks_.begin(), ranks_.end(), 0);
  }
  positions_.resize(world_size);
  for (int i = 0; i < world_size; ++i) positions_[ranks_[i]] = RankPosition{i / group_size, i % group_size};
}

}  // namespace psdp::shard
