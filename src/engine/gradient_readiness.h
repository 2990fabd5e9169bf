// Which gradients of a step the framework has reported ready, and so which chunks are complete. Ranges come
// in any order and granularity (a backward hook per tensor, a bucket, the whole buffer); a range reported
// twice in one step is the caller's bug and is refused, since counting it twice would declare a chunk
// ready too early.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "base/status.h"
#include "shard/shard_plan.h"

namespace psdp::engine {

class GradientReadiness {
 public:
  explicit GradientReadiness(const shard::ShardPlan& plan);

  // Elements [offset, offset + count) of registered buffer `buffer` (a gradient, or the parameter it pairs
  // with) are ready; the chunks this completes are appended to `completed`. Errors: invalid argument (no
  // such buffer, an optimizer-state buffer, a range past its end), invalid usage (a range overlapping one
  // reported before in this step, naming the buffer and both ranges).
  Status report(int buffer, uint64_t offset, uint64_t count, std::vector<uint32_t>& completed);
  // Everything not reported yet is ready.
  void reportRest(std::vector<uint32_t>& completed);

  // The ranges of parameter buffers not reported, chunk by chunk: (buffer, offset, count) in plan order.
  std::vector<shard::OwnedRange> unreported() const;
  bool complete(uint32_t chunk) const { return missing_[chunk] == 0; }

 private:
  // Marks [begin, end) of parameter `param` ready. REQUIRES: not reported before.
  void mark(int param, uint64_t begin, uint64_t end, std::vector<uint32_t>& completed);

  const shard::ShardPlan& plan_;
  std::vector<uint64_t> missing_;                    // per chunk: elements not reported
  std::vector<std::map<uint64_t, uint64_t>> ready_;  // per buffer (parameters): reported [begin -> end), merged
};

}  // namespace psdp::engine
