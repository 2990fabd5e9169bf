#include "shard/reshard.h"

#include <string_view>
#include <unordered_map>

namespace psdp::shard {
namespace {

// For each new parameter, the old parameter of the same name.
Result<std::vector<int>> matchParameters(const ShardPlan& from, const ShardPlan& to) {
  std::unordered_map<std::string_view, int> old_params;
  for (size_t i = 0; i < from.buffers().size(); ++i) {
    if (from.buffers()[i].role == Role::kParameter) old_params.emplace(from.buffers()[i].name, static_cast<int>(i));
  }
  std::vector<int> match(to.buffers().size(), -1);
  size_t matched = 0;
  for (size_t i = 0; i < to.buffers().size(); ++i) {
    const BufferDesc& b = to.buffers()[i];
    if (b.role != Role::kParameter) continue;
    auto it = old_params.find(b.name);
    if (it == old_params.end()) {
      return Status::invalidArgument("new plan: parameter buffers[{}] '{}' is not in the old plan", i, b.name);
    }
    if (from.buffers()[it->second].count != b.count) {
      return Status::invalidArgument("new plan: parameter buffers[{}] '{}' has {} elements, {} in the old plan", i,
                                     b.name, b.count, from.buffers()[it->second].count);
    }
    match[i] = it->second;
    ++matched;
  }
  if (matched != old_params.size()) {
    return Status::invalidArgument("old plan: {} parameters, the new plan has {}", old_params.size(), matched);
  }
  return match;
}

// Where an old rank's chunks start in its file, computed for the ranks that are asked about.
class OldFileOffsets {
 public:
  explicit OldFileOffsets(const ShardPlan& plan) : plan_(plan), prefix_(plan.config().world_size) {}
  uint64_t chunkStart(int rank, size_t chunk) {
    std::vector<uint64_t>& p = prefix_[rank];
    if (p.empty()) {
      p.resize(plan_.chunks().size() + 1, 0);
      for (size_t c = 0; c < plan_.chunks().size(); ++c) p[c + 1] = p[c] + plan_.ownedCount(rank, c);
    }
    return p[chunk];
  }

 private:
  const ShardPlan& plan_;
  std::vector<std::vector<uint64_t>> prefix_;
};

// The old rank that supplies element x of chunk `chunk`, and the piece it owns there.
struct Source {
  int rank;
  Extent piece;
};

Source sourceOf(const ShardPlan& from, size_t chunk, uint64_t x, int to_rank) {
  const PieceSplit split = from.pieceSplit(chunk);
  const RankLayout& layout = from.layout();
  const int g = static_cast<int>(split.memberAt(x));
  if (from.config().level == ShardLevel::kWorld) {
    const int k = static_cast<int>(split.replicaAt(g, x));
    return Source{layout.rankAt(k, g), split.worldPiece(g, k)};
  }
  const bool held = to_rank < layout.worldSize() && layout.position(to_rank).member == g;
  return Source{held ? to_rank : layout.rankAt(to_rank % layout.replicas(), g), split.groupPiece(g)};
}

void append(std::vector<ReshardMove>& moves, const ReshardMove& m) {
  if (!moves.empty()) {
    ReshardMove& last = moves.back();
    if (last.from_rank == m.from_rank && last.to_rank == m.to_rank && last.from_offset + last.count == m.from_offset &&
        last.to_offset + last.count == m.to_offset) {
      last.count += m.count;
      return;
    }
  }
  moves.push_back(m);
}

}  // namespace

Result<std::vector<ReshardMove>> reshardMoves(const ShardPlan& from, const ShardPlan& to) {
  PSDP_ASSIGN_OR_RETURN(std::vector<int> match, matchParameters(from, to));
  OldFileOffsets old_files(from);
  std::vector<ReshardMove> moves;
  for (int r = 0; r < to.config().world_size; ++r) {
    uint64_t to_offset = 0;
    for (const OwnedRange& range : to.ownedRanges(r)) {
      const int old_buffer = match[range.buffer];
      uint64_t offset = range.offset;
      const uint64_t end = range.offset + range.count;
      while (offset < end) {
        PSDP_ASSIGN_OR_RETURN(ChunkPosition pos, from.findChunk(old_buffer, offset));
        const Source src = sourceOf(from, pos.chunk, pos.offset, r);
        const uint64_t count = std::min(end - offset, src.piece.begin + src.piece.count - pos.offset);
        const uint64_t from_offset = old_files.chunkStart(src.rank, pos.chunk) + (pos.offset - src.piece.begin);
        append(moves, ReshardMove{src.rank, from_offset, r, to_offset, count});
        offset += count;
        to_offset += count;
      }
    }
  }
  return moves;
}

}  // namespace psdp::shard
