#include "engine/chunk_packing.h"

#include <algorithm>
#include <cstring>

#include "base/dtype.h"
#include "engine/dtype_convert.h"

namespace psdp::engine {

namespace {

// Zeroes the elements of [begin, end) of `pack` that no segment covers (the padding): a pass over the
// padding alone, not the whole buffer, which the copies write anyway.
void zeroPadding(std::byte* pack, size_t esize, uint64_t begin, uint64_t end, std::vector<PackedSegment> segments) {
  std::sort(segments.begin(), segments.end(),
            [](const PackedSegment& a, const PackedSegment& b) { return a.packed < b.packed; });
  uint64_t at = begin;
  for (const PackedSegment& segment : segments) {
    if (segment.packed > at) std::memset(pack + at * esize, 0, static_cast<size_t>(segment.packed - at) * esize);
    at = std::max(at, segment.packed + segment.count);
  }
  if (end > at) std::memset(pack + at * esize, 0, static_cast<size_t>(end - at) * esize);
}

}  // namespace

std::vector<Transfer> groupChunks(const shard::ShardPlan& plan, size_t chunks_per_transfer) {
  const bool world_level = plan.config().level == shard::ShardLevel::kWorld;
  const auto replicas = static_cast<uint64_t>(plan.layout().replicas());
  std::vector<Transfer> transfers;
  for (const shard::Space& space : plan.spaces()) {
    for (size_t first = 0; first < space.chunks.size();) {
      const size_t n = chunks_per_transfer == 0 ? space.chunks.size() - first
                                                : std::min(chunks_per_transfer, space.chunks.size() - first);
      Transfer t;
      for (size_t i = first; i < first + n; ++i) {
        const shard::Chunk& c = plan.chunks()[space.chunks[i]];
        t.chunks.push_back(static_cast<uint32_t>(space.chunks[i]));
        t.offset.push_back(t.part);
        t.part += world_level ? c.padded_world_piece : c.padded_group_piece;
      }
      t.block = world_level ? t.part * replicas : t.part;
      transfers.push_back(std::move(t));
      first += n;
    }
  }
  // Chunks are numbered by space and then offset, so the transfers are in chunk order already; sorting by
  // their first chunk keeps it so whatever the spaces' order.
  std::sort(transfers.begin(), transfers.end(),
            [](const Transfer& a, const Transfer& b) { return a.chunks.front() < b.chunks.front(); });
  return transfers;
}

ChunkPacking::ChunkPacking(const shard::ShardPlan& plan, const std::vector<Transfer>& transfers, int rank,
                           const std::vector<void*>& pointers, bool float32_partials)
    : plan_(plan),
      transfers_(transfers),
      pointers_(pointers),
      gradient_of_(plan.buffers().size(), -1),
      float32_partials_(float32_partials),
      rank_(rank),
      group_(plan.layout().groupSize()),
      replicas_(plan.layout().replicas()),
      member_(plan.layout().position(rank).member),
      replica_(plan.layout().position(rank).replica),
      world_level_(plan.config().level == shard::ShardLevel::kWorld) {
  for (size_t b = 0; b < plan.buffers().size(); ++b) {
    if (plan.buffers()[b].role == shard::Role::kGradient) {
      gradient_of_[static_cast<size_t>(plan.parameterOf(static_cast<int>(b)))] = static_cast<int>(b);
    }
    if (plan.buffers()[b].role == shard::Role::kGradientShard) shard_ = static_cast<float*>(pointers[b]);
  }
  if (shard_ != nullptr) {
    uint64_t at = 0;
    for (size_t c = 0; c < plan.chunks().size(); ++c) {
      shard_offset_.push_back(at);
      at += plan.ownedCount(rank, c);
    }
  }
}

psdp_dtype_t ChunkPacking::gradDtype(size_t t) const {
  return *plan_.spaces()[static_cast<size_t>(plan_.chunks()[transfers_[t].chunks[0]].space)].grad_dtype;
}

psdp_dtype_t ChunkPacking::paramDtype(size_t t) const {
  return plan_.spaces()[static_cast<size_t>(plan_.chunks()[transfers_[t].chunks[0]].space)].dtype;
}

psdp_dtype_t ChunkPacking::reduceDtype(size_t t) const {
  const psdp_dtype_t grad = gradDtype(t);
  return float32_partials_ && (grad == PSDP_BFLOAT16 || grad == PSDP_FLOAT16) ? PSDP_FLOAT32 : grad;
}

bool ChunkPacking::reducesInPlace(size_t t) const {
  return reduceDtype(t) == gradDtype(t) && inPlace(t).has_value();
}

size_t ChunkPacking::packedReductions() const {
  size_t packed = 0;
  for (size_t t = 0; t < transfers_.size(); ++t) packed += reducesInPlace(t) ? 0 : 1;
  return packed;
}

size_t ChunkPacking::packedGathers() const {
  size_t packed = 0;
  for (size_t t = 0; t < transfers_.size(); ++t) packed += inPlace(t) ? 0 : 1;
  return packed;
}

size_t ChunkPacking::maxReducePackBytes() const {
  uint64_t most = 0;
  for (size_t t = 0; t < transfers_.size(); ++t) {
    if (!reducesInPlace(t)) most = std::max(most, packElems(t) * dtypeSize(reduceDtype(t)));
  }
  return static_cast<size_t>(most);
}

size_t ChunkPacking::maxGatherPackBytes() const {
  uint64_t most = 0;
  for (size_t t = 0; t < transfers_.size(); ++t) {
    if (!inPlace(t)) most = std::max(most, packElems(t) * dtypeSize(paramDtype(t)));
  }
  return static_cast<size_t>(most);
}

void ChunkPacking::appendSegments(size_t t, size_t i, bool owned_only, std::vector<PackedSegment>& out) const {
  const Transfer& transfer = transfers_[t];
  const uint32_t chunk = transfer.chunks[i];
  const shard::PieceSplit split = plan_.pieceSplit(chunk);
  for (int g = 0; g < group_; ++g) {
    if (owned_only && g != member_) continue;
    const uint64_t block_at = static_cast<uint64_t>(g) * transfer.block + transfer.offset[i];
    if (!world_level_) {
      const shard::Extent piece = split.groupPiece(static_cast<uint64_t>(g));
      out.push_back({chunk, piece.begin, block_at, piece.count});
      continue;
    }
    for (int k = 0; k < replicas_; ++k) {
      if (owned_only && k != replica_) continue;
      const shard::Extent piece = split.worldPiece(static_cast<uint64_t>(g), static_cast<uint64_t>(k));
      out.push_back({chunk, piece.begin, block_at + static_cast<uint64_t>(k) * transfer.part, piece.count});
    }
  }
}

std::optional<InPlace> ChunkPacking::inPlace(size_t t) const {
  const Transfer& transfer = transfers_[t];
  if (transfer.chunks.size() != 1) return std::nullopt;
  const uint32_t chunk = transfer.chunks[0];
  std::vector<PackedSegment> all;
  appendSegments(t, 0, false, all);
  // Every piece full (no padding) and where the pack buffer would hold it, relative to the chunk's start: the
  // pieces then tile the chunk exactly as the blocks (and parts) tile a pack buffer.
  const uint64_t padded = world_level_ ? transfer.part : transfer.block;
  for (const PackedSegment& segment : all) {
    if (segment.chunk_offset != segment.packed || segment.count != padded) return std::nullopt;
  }
  const shard::Chunk& c = plan_.chunks()[chunk];
  const shard::Space& space = plan_.spaces()[static_cast<size_t>(c.space)];
  const size_t i =
      static_cast<size_t>(std::upper_bound(space.starts.begin(), space.starts.end(), c.begin) - space.starts.begin()) -
      1;
  if (c.begin + c.count > space.starts[i + 1]) return std::nullopt;  // spans two buffers
  const int param = space.buffers[i];
  const uint64_t offset = c.begin - space.starts[i];
  return InPlace{
      static_cast<std::byte*>(pointers_[static_cast<size_t>(gradient_of_[param])]) + offset * dtypeSize(gradDtype(t)),
      static_cast<std::byte*>(pointers_[static_cast<size_t>(param)]) + offset * dtypeSize(paramDtype(t))};
}

std::vector<PackedSegment> ChunkPacking::segments(size_t t) const {
  std::vector<PackedSegment> out;
  for (size_t i = 0; i < transfers_[t].chunks.size(); ++i) appendSegments(t, i, false, out);
  return out;
}

std::vector<PackedSegment> ChunkPacking::ownedSegments(size_t t) const {
  std::vector<PackedSegment> out;
  for (size_t i = 0; i < transfers_[t].chunks.size(); ++i) appendSegments(t, i, true, out);
  return out;
}

template <typename Fn>
void ChunkPacking::forEachRun(const PackedSegment& segment, Fn fn) const {
  const shard::Chunk& c = plan_.chunks()[segment.chunk];
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

void ChunkPacking::packGradients(size_t t, std::byte* pack) const {
  const psdp_dtype_t grad = gradDtype(t), reduce = reduceDtype(t);
  const size_t from = dtypeSize(grad), to = dtypeSize(reduce);
  const std::vector<PackedSegment> all = segments(t);
  zeroPadding(pack, to, 0, packElems(t), all);
  for (const PackedSegment& segment : all) {
    forEachRun(segment, [&](int param, uint64_t offset, uint64_t n, uint64_t packed) {
      const auto* grads = static_cast<const std::byte*>(pointers_[static_cast<size_t>(gradient_of_[param])]);
      convertElements(pack + packed * to, reduce, grads + offset * from, grad, n);
    });
  }
}

void ChunkPacking::deliverOwnedGradients(size_t t, const std::byte* reduced) const {
  const psdp_dtype_t grad = gradDtype(t), reduce = reduceDtype(t);
  const size_t from = dtypeSize(reduce), to = dtypeSize(grad);
  for (const PackedSegment& segment : ownedSegments(t)) {
    if (shard_ != nullptr) {
      // The owned piece is one run of the shard file: no buffer boundaries to follow.
      convertElements(shard_ + shard_offset_[segment.chunk], PSDP_FLOAT32, reduced + segment.packed * from, reduce,
                      segment.count);
      continue;
    }
    forEachRun(segment, [&](int param, uint64_t offset, uint64_t n, uint64_t packed) {
      auto* grads = static_cast<std::byte*>(pointers_[static_cast<size_t>(gradient_of_[param])]);
      // In place, the reduced piece is where it belongs already.
      if (grads + offset * to != reduced + packed * from) {
        convertElements(grads + offset * to, grad, reduced + packed * from, reduce, n);
      }
    });
  }
}

std::vector<GradientRun> ChunkPacking::ownedGradients(uint32_t chunk) const {
  std::vector<GradientRun> runs;
  if (shard_ != nullptr) {
    runs.push_back({reinterpret_cast<const std::byte*>(shard_ + shard_offset_[chunk]), PSDP_FLOAT32,
                    plan_.ownedCount(rank_, chunk)});
    return runs;
  }
  for (const shard::OwnedRange& range : plan_.ownedRanges(rank_, chunk)) {
    const int grad = gradient_of_[static_cast<size_t>(range.buffer)];
    const psdp_dtype_t dtype = plan_.buffers()[static_cast<size_t>(grad)].dtype;
    runs.push_back(
        {static_cast<const std::byte*>(pointers_[static_cast<size_t>(grad)]) + range.offset * dtypeSize(dtype), dtype,
         range.count});
  }
  return runs;
}

void ChunkPacking::packOwnedParameters(size_t t, std::byte* pack) const {
  const size_t esize = dtypeSize(paramDtype(t));
  const Transfer& transfer = transfers_[t];
  // The rank's place: its part of its block (level world) or its whole block.
  const uint64_t place = static_cast<uint64_t>(member_) * transfer.block +
                         (world_level_ ? static_cast<uint64_t>(replica_) * transfer.part : 0);
  const std::vector<PackedSegment> owned = ownedSegments(t);
  zeroPadding(pack, esize, place, place + transfer.part, owned);
  for (const PackedSegment& segment : owned) {
    forEachRun(segment, [&](int param, uint64_t offset, uint64_t n, uint64_t packed) {
      const auto* params = static_cast<const std::byte*>(pointers_[static_cast<size_t>(param)]);
      std::memcpy(pack + packed * esize, params + offset * esize, n * esize);
    });
  }
}

void ChunkPacking::unpackParameters(size_t t, const std::byte* pack) const {
  const size_t esize = dtypeSize(paramDtype(t));
  for (const PackedSegment& segment : segments(t)) {
    forEachRun(segment, [&](int param, uint64_t offset, uint64_t n, uint64_t packed) {
      auto* params = static_cast<std::byte*>(pointers_[static_cast<size_t>(param)]);
      std::memcpy(params + offset * esize, pack + packed * esize, n * esize);
    });
  }
}

}  // namespace psdp::engine
