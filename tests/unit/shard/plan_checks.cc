#include "plan_checks.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>

namespace psdp::shard::testing {
namespace {

using ::testing::AssertionFailure;
using ::testing::AssertionResult;
using ::testing::AssertionSuccess;

// The plan's flat layout recomputed from the buffer list: per parameter its space key, offset, and the
// sizes of the space's dtypes.
struct Flat {
  std::vector<uint64_t> offset;               // per buffer (parameters only)
  std::vector<uint64_t> s_min, s_max, total;  // per buffer: of its space
  std::vector<int> param_of;                  // per buffer: its parameter, or -1
};

Flat recomputeFlat(const std::vector<BufferDesc>& buffers) {
  const size_t n = buffers.size();
  std::vector<int> params, grads;
  for (size_t i = 0; i < n; ++i) {
    if (buffers[i].role == Role::kParameter) params.push_back(static_cast<int>(i));
    if (buffers[i].role == Role::kGradient) grads.push_back(static_cast<int>(i));
  }
  Flat f{std::vector<uint64_t>(n), std::vector<uint64_t>(n), std::vector<uint64_t>(n), std::vector<uint64_t>(n),
         std::vector<int>(n, -1)};
  using Key = std::tuple<int, int, int, int>;
  std::map<Key, uint64_t> next;
  std::map<Key, std::vector<int>> members;
  for (size_t j = 0; j < params.size(); ++j) {
    const BufferDesc& p = buffers[params[j]];
    const BufferDesc* g = grads.empty() ? nullptr : &buffers[grads[j]];
    Key key{int(p.memory), int(p.dtype), g ? int(g->dtype) : -1, g ? int(g->memory) : -1};
    const int b = params[j];
    f.offset[b] = next[key];
    next[key] += p.count;
    members[key].push_back(b);
    uint64_t a = dtypeSize(p.dtype), c = g ? dtypeSize(g->dtype) : a;
    f.s_min[b] = std::min(a, c);
    f.s_max[b] = std::max(a, c);
    f.param_of[b] = b;
    if (g) f.param_of[grads[j]] = b;
  }
  for (auto& [key, list] : members) {
    for (int b : list) f.total[b] = next[key];
  }
  return f;
}

// Per parameter, the intervals some set of ranks owns; tiled() says whether they cover it exactly once.
class Coverage {
 public:
  void add(const std::vector<OwnedRange>& ranges) {
    for (const OwnedRange& r : ranges) owned_[r.buffer].push_back({r.offset, r.count});
  }
  std::optional<std::string> tiled(const std::vector<BufferDesc>& buffers) {
    for (size_t b = 0; b < buffers.size(); ++b) {
      auto& list = owned_[static_cast<int>(b)];
      if (buffers[b].role != Role::kParameter) {
        if (!list.empty()) return "non-parameter buffer " + buffers[b].name + " is owned";
        continue;
      }
      std::sort(list.begin(), list.end());
      uint64_t at = 0;
      for (auto [offset, count] : list) {
        if (offset != at || count == 0) {
          return "buffer " + buffers[b].name + ": element " + std::to_string(std::min(offset, at)) +
                 (offset < at ? " owned twice" : " not owned");
        }
        at += count;
      }
      if (at != buffers[b].count)
        return "buffer " + buffers[b].name + ": tail from " + std::to_string(at) + " not owned";
    }
    return std::nullopt;
  }

 private:
  std::map<int, std::vector<std::pair<uint64_t, uint64_t>>> owned_;
};

AssertionResult checkCoverage(const ShardPlan& plan) {
  const RankLayout& layout = plan.layout();
  if (plan.config().level == ShardLevel::kWorld) {
    Coverage all;
    for (int r = 0; r < layout.worldSize(); ++r) all.add(plan.ownedRanges(r));
    if (auto problem = all.tiled(plan.buffers())) return AssertionFailure() << "world: " << *problem;
    return AssertionSuccess();
  }
  Coverage group;
  for (int g = 0; g < layout.groupSize(); ++g) {
    const std::vector<OwnedRange> ranges = plan.ownedRanges(layout.rankAt(0, g));
    group.add(ranges);
    for (int k = 1; k < layout.replicas(); ++k) {
      if (plan.ownedRanges(layout.rankAt(k, g)) != ranges) {
        return AssertionFailure() << "replica " << k << " member " << g << " owns other ranges than replica 0";
      }
    }
  }
  if (auto problem = group.tiled(plan.buffers())) return AssertionFailure() << "shard group: " << *problem;
  return AssertionSuccess();
}

// Pieces of every chunk: contiguous inside the chunk, nested, aligned, balanced.
AssertionResult checkPieces(const ShardPlan& plan, const Flat& flat) {
  const RankLayout& layout = plan.layout();
  const uint64_t align = plan.config().align_bytes;
  for (size_t c = 0; c < plan.chunks().size(); ++c) {
    const Chunk& chunk = plan.chunks()[c];
    const Space& space = plan.spaces()[chunk.space];
    const int first = space.buffers.front();
    const uint64_t unit = align / flat.s_min[first];
    const PieceSplit split = plan.pieceSplit(c);
    uint64_t at = 0, lo = ~uint64_t{0}, hi = 0;
    for (int g = 0; g < layout.groupSize(); ++g) {
      const Extent gp = split.groupPiece(g);
      if (gp.begin != at) return AssertionFailure() << "chunk " << c << ": group piece " << g << " not contiguous";
      uint64_t inner = gp.begin;
      for (int k = 0; k < layout.replicas(); ++k) {
        const Extent wp = split.worldPiece(g, k);
        if (wp.begin != inner) return AssertionFailure() << "chunk " << c << ": world piece not nested in order";
        inner += wp.count;
      }
      if (inner != gp.begin + gp.count) return AssertionFailure() << "chunk " << c << ": world pieces leave a gap";
      at += gp.count;
    }
    if (at != chunk.count) return AssertionFailure() << "chunk " << c << ": group pieces do not fill it";
    for (int r = 0; r < layout.worldSize(); ++r) {
      const Extent piece = plan.ownedPiece(r, c);
      const std::vector<OwnedRange> ranges = plan.ownedRanges(r, c);
      uint64_t sum = 0;
      for (const OwnedRange& range : ranges) sum += range.count;
      if (sum != piece.count) return AssertionFailure() << "chunk " << c << " rank " << r << ": ranges miss elements";
      lo = std::min(lo, piece.count);
      hi = std::max(hi, piece.count);
      if (ranges.empty()) continue;
      // Aligned start (and end, unless the space ends there) in the bytes of both dtypes.
      const uint64_t start = flat.offset[ranges.front().buffer] + ranges.front().offset;
      const uint64_t end = flat.offset[ranges.back().buffer] + ranges.back().offset + ranges.back().count;
      for (uint64_t s : {flat.s_min[first], flat.s_max[first]}) {
        if (start * s % align != 0 || (end != flat.total[first] && end * s % align != 0)) {
          return AssertionFailure() << "chunk " << c << " rank " << r << ": piece [" << start << ", " << end
                                    << ") not aligned to " << align << " bytes for a " << s << "-byte dtype";
        }
      }
      if (piece.count > chunk.padded_world_piece || chunk.padded_world_piece % unit != 0) {
        return AssertionFailure() << "chunk " << c << ": padded piece " << chunk.padded_world_piece << " below "
                                  << piece.count << " or unaligned";
      }
    }
    if (hi - lo > unit) {
      return AssertionFailure() << "chunk " << c << ": owned counts " << lo << ".." << hi << " differ by more than "
                                << unit << " elements";
    }
  }
  return AssertionSuccess();
}

// Chunks: within one space, in registration order, no larger than chunk_bytes (unless the minimum of one
// aligned unit per rank), full ones splitting evenly.
AssertionResult checkChunks(const ShardPlan& plan, const Flat& flat) {
  const PlanConfig& config = plan.config();
  const uint64_t parts = config.level == ShardLevel::kWorld ? config.world_size : config.group_size;
  std::tuple<int, uint64_t> previous{-1, 0};
  for (size_t c = 0; c < plan.chunks().size(); ++c) {
    const Chunk& chunk = plan.chunks()[c];
    const Space& space = plan.spaces()[chunk.space];
    auto it = std::upper_bound(space.starts.begin(), space.starts.end(), chunk.begin) - 1;
    const int buffer = space.buffers[it - space.starts.begin()];
    std::tuple<int, uint64_t> first{buffer, chunk.begin - *it};
    if (c > 0 && !(previous < first)) return AssertionFailure() << "chunk " << c << " is out of registration order";
    previous = first;
    const uint64_t step = parts * config.align_bytes / flat.s_min[buffer];
    if (chunk.count * flat.s_max[buffer] > std::max(config.chunk_bytes, step * flat.s_max[buffer])) {
      return AssertionFailure() << "chunk " << c << " of " << chunk.count << " elements exceeds chunk_bytes";
    }
    if (chunk.begin + chunk.count != flat.total[buffer] && chunk.count % step != 0) {
      return AssertionFailure() << "full chunk " << c << " of " << chunk.count << " does not split into " << parts
                                << " aligned pieces";
    }
  }
  return AssertionSuccess();
}

AssertionResult checkFindChunk(const ShardPlan& plan, const Flat& flat) {
  for (size_t b = 0; b < plan.buffers().size(); ++b) {
    const int p = flat.param_of[b];
    if (p < 0) {
      if (plan.findChunk(static_cast<int>(b), 0).isOk()) return AssertionFailure() << "optimizer state has a chunk";
      continue;
    }
    const uint64_t count = plan.buffers()[b].count;
    for (uint64_t offset : {uint64_t{0}, count / 2, count - 1}) {
      auto pos = plan.findChunk(static_cast<int>(b), offset);
      if (!pos.isOk()) return AssertionFailure() << pos.status().toString();
      const Chunk& chunk = plan.chunks()[pos.value().chunk];
      if (plan.spaces()[chunk.space].buffers.front() != plan.spaces()[plan.spaceOf(p)].buffers.front() ||
          chunk.begin + pos.value().offset != flat.offset[p] + offset || pos.value().offset >= chunk.count) {
        return AssertionFailure() << "findChunk(" << b << ", " << offset << ") is wrong";
      }
    }
    if (plan.findChunk(static_cast<int>(b), count).isOk()) return AssertionFailure() << "offset past the end found";
  }
  return AssertionSuccess();
}

}  // namespace

AssertionResult planInvariantsHold(const ShardPlan& plan) {
  const Flat flat = recomputeFlat(plan.buffers());
  for (size_t b = 0; b < plan.buffers().size(); ++b) {
    if (plan.buffers()[b].role == Role::kParameter && plan.spaceOffset(static_cast<int>(b)) != flat.offset[b]) {
      return AssertionFailure() << "buffer " << b << " at space offset " << plan.spaceOffset(static_cast<int>(b))
                                << ", expected " << flat.offset[b];
    }
  }
  for (auto check :
       {checkCoverage(plan), checkPieces(plan, flat), checkChunks(plan, flat), checkFindChunk(plan, flat)}) {
    if (!check) return check;
  }
  for (int r = 0; r < plan.layout().worldSize(); ++r) {
    uint64_t sum = 0;
    for (const OwnedRange& range : plan.ownedRanges(r)) sum += range.count;
    if (sum != plan.ownedCount(r)) return AssertionFailure() << "rank " << r << ": ownedCount disagrees with ranges";
  }
  return AssertionSuccess();
}

namespace {

// A rank's shard file: its owned ranges end to end.
class ShardFile {
 public:
  explicit ShardFile(std::vector<OwnedRange> ranges) : ranges_(std::move(ranges)), starts_{0} {
    for (const OwnedRange& r : ranges_) starts_.push_back(starts_.back() + r.count);
  }
  uint64_t size() const { return starts_.back(); }
  // The range holding file offset f (< size()), advanced to f.
  OwnedRange at(uint64_t f) const {
    size_t i = std::upper_bound(starts_.begin(), starts_.end(), f) - starts_.begin() - 1;
    const uint64_t skip = f - starts_[i];
    return OwnedRange{ranges_[i].buffer, ranges_[i].offset + skip, ranges_[i].count - skip};
  }

 private:
  std::vector<OwnedRange> ranges_;
  std::vector<uint64_t> starts_;
};

}  // namespace

AssertionResult reshardMovesValid(const ShardPlan& from, const ShardPlan& to, const std::vector<ReshardMove>& moves) {
  std::vector<ShardFile> old_files, new_files;
  for (int r = 0; r < from.layout().worldSize(); ++r) old_files.emplace_back(from.ownedRanges(r));
  for (int r = 0; r < to.layout().worldSize(); ++r) new_files.emplace_back(to.ownedRanges(r));
  std::vector<uint64_t> written(new_files.size(), 0);  // moves are sorted: each continues its rank's file
  for (const ReshardMove& m : moves) {
    if (m.to_rank < 0 || m.to_rank >= to.layout().worldSize() || m.from_rank < 0 ||
        m.from_rank >= from.layout().worldSize() || m.count == 0) {
      return AssertionFailure() << "move with a bad rank or count";
    }
    if (m.to_offset != written[m.to_rank]) {
      return AssertionFailure() << "rank " << m.to_rank << ": move to " << m.to_offset << " but " << written[m.to_rank]
                                << " written (gap, overlap or out of order)";
    }
    if (m.from_offset + m.count > old_files[m.from_rank].size()) {
      return AssertionFailure() << "move reads past the end of old rank " << m.from_rank << "'s file";
    }
    for (uint64_t done = 0; done < m.count;) {
      const OwnedRange src = old_files[m.from_rank].at(m.from_offset + done);
      const OwnedRange dst = new_files[m.to_rank].at(m.to_offset + done);
      if (from.buffers()[src.buffer].name != to.buffers()[dst.buffer].name || src.offset != dst.offset) {
        return AssertionFailure() << "move to rank " << m.to_rank << " offset " << m.to_offset + done << " copies "
                                  << from.buffers()[src.buffer].name << "[" << src.offset << "] into "
                                  << to.buffers()[dst.buffer].name << "[" << dst.offset << "]";
      }
      done += std::min({src.count, dst.count, m.count - done});
    }
    written[m.to_rank] += m.count;
  }
  for (size_t r = 0; r < new_files.size(); ++r) {
    if (written[r] != new_files[r].size()) {
      return AssertionFailure() << "new rank " << r << ": " << written[r] << " of " << new_files[r].size()
                                << " elements written";
    }
  }
  return AssertionSuccess();
}

}  // namespace psdp::shard::testing
