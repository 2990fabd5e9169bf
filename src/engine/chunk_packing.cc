#include "engine/chunk_packing.h"

#include <algorithm>
#include <cstring>

#include "base/dtype.h"

namespace psdp::engine {

ChunkPacking::ChunkPacking(const shard::ShardPlan& plan, int rank, const std::vector<void*>& pointers)
    : plan_(plan),
      pointers_(pointers),
      gradient_of_(plan.buffers().size(), -1),
      group_(plan.layout().groupSize()),
      replicas_(plan.layout().replicas()),
      member_(plan.layout().position(rank).member),
      replica_(plan.layout().position(rank).replica),
      world_level_(plan.config().level == shard::ShardLevel::kWorld) {
  for (size_t b = 0; b < plan.buffers().size(); ++b) {
    if (plan.buffers()[b].role == shard::Role::kGradient) gradient_of_[plan.parameterOf(static_cast<int>(b))] = b;
  }
}

uint64_t ChunkPacking::blockElems(size_t chunk) const {
  const shard::Chunk& c = plan_.chunks()[chunk];
  return world_level_ ? c.padded_world_piece * static_cast<uint64_t>(replicas_) : c.padded_group_piece;
}

size_t ChunkPacking::maxPackBytes(size_t elem_bytes) const {
  uint64_t most = 0;
  for (size_t c = 0; c < plan_.chunks().size(); ++c) most = std::max(most, packElems(c));
  return static_cast<size_t>(most) * elem_bytes;
}

std::vector<PackedSegment> ChunkPacking::segments(size_t chunk) const {
  const shard::PieceSplit split = plan_.pieceSplit(chunk);
  const shard::Chunk& c = plan_.chunks()[chunk];
  const uint64_t block = blockElems(chunk);
  std::vector<PackedSegment> out;
  for (int g = 0; g < group_; ++g) {
    if (!world_level_) {
      const shard::Extent piece = split.groupPiece(static_cast<uint64_t>(g));
      out.push_back({piece.begin, static_cast<uint64_t>(g) * block, piece.count});
      continue;
    }
    for (int k = 0; k < replicas_; ++k) {
      const shard::Extent piece = split.worldPiece(static_cast<uint64_t>(g), static_cast<uint64_t>(k));
      out.push_back({piece.begin, static_cast<uint64_t>(g) * block + static_cast<uint64_t>(k) * c.padded_world_piece,
                     piece.count});
    }
  }
  return out;
}

PackedSegment ChunkPacking::ownedSegment(size_t chunk) const {
  const size_t index =
      world_level_ ? static_cast<size_t>(member_ * replicas_ + replica_) : static_cast<size_t>(member_);
  return segments(chunk)[index];
}

template <typename Fn>
void ChunkPacking::forEachRun(size_t chunk, const PackedSegment& segment, Fn fn) const {
  const shard::Chunk& c = plan_.chunks()[chunk];
  const shard::Space& space = plan_.spaces()[static_cast<size_t>(c.space)];
  uint64_t at = c.begin + segment.chunk_offset;
  const uint64_t end = at + segment.count;
  uint64_t packed = segment.packed;
  size_t i =
      static_cast<size_t>(std::upper_bound(space.starts.begin(), space.starts.end(), at) - space.starts.begin()) - 1;
  for (; at < end; ++i) {
    const uint64_t take = std::min(end, space.starts[i + 1]) - at;
    fn(space.buffers[i], at - space.starts[i], take, packed);
    at += take;
    packed += take;
  }
}

void ChunkPacking::packGradients(size_t chunk, std::byte* pack) const {
  const size_t esize = dtypeSize(*plan_.spaces()[static_cast<size_t>(plan_.chunks()[chunk].space)].grad_dtype);
  std::memset(pack, 0, static_cast<size_t>(packElems(chunk)) * esize);
  for (const PackedSegment& segment : segments(chunk)) {
    forEachRun(chunk, segment, [&](int param, uint64_t offset, uint64_t n, uint64_t packed) {
      const auto* grads = static_cast<const std::byte*>(pointers_[static_cast<size_t>(gradient_of_[param])]);
      std::memcpy(pack + packed * esize, grads + offset * esize, n * esize);
    });
  }
}

void ChunkPacking::storeOwnedGradients(size_t chunk, const std::byte* pack) const {
  const size_t esize = dtypeSize(*plan_.spaces()[static_cast<size_t>(plan_.chunks()[chunk].space)].grad_dtype);
  forEachRun(chunk, ownedSegment(chunk), [&](int param, uint64_t offset, uint64_t n, uint64_t packed) {
    auto* grads = static_cast<std::byte*>(pointers_[static_cast<size_t>(gradient_of_[param])]);
    std::memcpy(grads + offset * esize, pack + packed * esize, n * esize);
  });
}

void ChunkPacking::packOwnedParameters(size_t chunk, std::byte* pack) const {
  const size_t esize = dtypeSize(plan_.spaces()[static_cast<size_t>(plan_.chunks()[chunk].space)].dtype);
  const PackedSegment owned = ownedSegment(chunk);
  const uint64_t padded = world_level_ ? plan_.chunks()[chunk].padded_world_piece : blockElems(chunk);
  std::memset(pack + owned.packed * esize, 0, static_cast<size_t>(padded) * esize);
  forEachRun(chunk, owned, [&](int param, uint64_t offset, uint64_t n, uint64_t packed) {
    const auto* params = static_cast<const std::byte*>(pointers_[static_cast<size_t>(param)]);
    std::memcpy(pack + packed * esize, params + offset * esize, n * esize);
  });
}

void ChunkPacking::unpackParameters(size_t chunk, const std::byte* pack) const {
  const size_t esize = dtypeSize(plan_.spaces()[static_cast<size_t>(plan_.chunks()[chunk].space)].dtype);
  for (const PackedSegment& segment : segments(chunk)) {
    forEachRun(chunk, segment, [&](int param, uint64_t offset, uint64_t n, uint64_t packed) {
      auto* params = static_cast<std::byte*>(pointers_[static_cast<size_t>(param)]);
      std::memcpy(params + offset * esize, pack + packed * esize, n * esize);
    });
  }
}

}  // namespace psdp::engine
