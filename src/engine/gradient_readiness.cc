#include "engine/gradient_readiness.h"

#include <algorithm>

namespace psdp::engine {

GradientReadiness::GradientReadiness(const shard::ShardPlan& plan)
    : plan_(plan), missing_(plan.chunks().size()), ready_(plan.buffers().size()) {
  for (size_t c = 0; c < plan.chunks().size(); ++c) missing_[c] = plan.chunks()[c].count;
}

Status GradientReadiness::report(int buffer, uint64_t offset, uint64_t count, std::vector<uint32_t>& completed) {
  const auto& buffers = plan_.buffers();
  if (buffer < 0 || static_cast<size_t>(buffer) >= buffers.size()) {
    return Status::invalidArgument("buffer {} is not one of the {} registered", buffer, buffers.size());
  }
  const int param = plan_.parameterOf(buffer);
  if (param < 0) {
    return Status::invalidArgument("buffer {} ('{}') is optimizer state, which has no gradients", buffer,
                                   buffers[static_cast<size_t>(buffer)].name);
  }
  const uint64_t size = buffers[static_cast<size_t>(param)].count;
  if (offset > size || count > size - offset) {
    return Status::invalidArgument("elements [{}, {}) of buffer {} ('{}') are past its {} elements", offset,
                                   offset + count, buffer, buffers[static_cast<size_t>(buffer)].name, size);
  }
  if (count == 0) return Status::ok();
  std::map<uint64_t, uint64_t>& ready = ready_[static_cast<size_t>(param)];
  const uint64_t end = offset + count;
  // The first reported range that ends after `offset` overlaps if it begins before `end`.
  auto next = ready.upper_bound(offset);
  if (next != ready.begin()) {
    auto before = std::prev(next);
    if (before->second > offset) next = before;
  }
  if (next != ready.end() && next->first < end) {
    return Status::invalidUsage(
        "gradients [{}, {}) of buffer {} ('{}') overlap [{}, {}), reported ready before in "
        "this step",
        offset, end, buffer, buffers[static_cast<size_t>(buffer)].name, next->first, next->second);
  }
  mark(param, offset, end, completed);
  return Status::ok();
}

void GradientReadiness::mark(int param, uint64_t begin, uint64_t end, std::vector<uint32_t>& completed) {
  std::map<uint64_t, uint64_t>& ready = ready_[static_cast<size_t>(param)];
  // Merge with the neighbours it touches, so that the map stays small however fine the reports.
  uint64_t merged_begin = begin, merged_end = end;
  auto after = ready.find(end);
  if (after != ready.end()) {
    merged_end = after->second;
    ready.erase(after);
  }
  auto it = ready.lower_bound(begin);
  if (it != ready.begin() && std::prev(it)->second == begin) {
    --it;
    merged_begin = it->first;
    ready.erase(it);
  }
  ready[merged_begin] = merged_end;

  const shard::Space& space = plan_.spaces()[static_cast<size_t>(plan_.spaceOf(param))];
  const uint64_t base = plan_.spaceOffset(param);
  const uint64_t from = base + begin, to = base + end;
  size_t chunk = plan_.findChunk(param, begin).value().chunk;
  for (auto c = std::find(space.chunks.begin(), space.chunks.end(), chunk); c != space.chunks.end(); ++c) {
    const shard::Chunk& ch = plan_.chunks()[*c];
    if (ch.begin >= to) break;
    const uint64_t overlap = std::min(to, ch.begin + ch.count) - std::max(from, ch.begin);
    missing_[*c] -= overlap;
    if (missing_[*c] == 0) completed.push_back(static_cast<uint32_t>(*c));
  }
}

void GradientReadiness::reportRest(std::vector<uint32_t>& completed) {
  for (const shard::OwnedRange& range : unreported()) {
    mark(range.buffer, range.offset, range.offset + range.count, completed);
  }
}

std::vector<shard::OwnedRange> GradientReadiness::unreported() const {
  std::vector<shard::OwnedRange> gaps;
  for (size_t b = 0; b < plan_.buffers().size(); ++b) {
    if (plan_.buffers()[b].role != shard::Role::kParameter) continue;
    uint64_t at = 0;
    for (const auto& [begin, end] : ready_[b]) {
      if (begin > at) gaps.push_back({static_cast<int>(b), at, begin - at});
      at = end;
    }
    if (at < plan_.buffers()[b].count) gaps.push_back({static_cast<int>(b), at, plan_.buffers()[b].count - at});
  }
  return gaps;
}

}  // namespace psdp::engine
