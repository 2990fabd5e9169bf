// ChunkPacking on real plans: transfers group consecutive chunks of one space; every element of a transfer's
// chunks has exactly one place in its pack buffer, inside the right block (and part), never in another
// piece's padding; gradients packed and the owned ones stored back land where they came from; and exactly
// the chunks inside one buffer with full pieces run in place.
#include "engine/chunk_packing.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace psdp::engine {
namespace {

using shard::BufferDesc;
using shard::MemoryKind;
using shard::Role;

struct Fixture {
  std::vector<BufferDesc> buffers;
  std::vector<std::vector<float>> data;
  std::vector<void*> pointers;
  shard::ShardPlan plan;

  Fixture(std::vector<uint64_t> counts, int world, int group, shard::ShardLevel level, uint64_t chunk_bytes)
      : plan(build(counts, world, group, level, chunk_bytes)) {
    for (size_t i = 0; i < buffers.size(); ++i) {
      data.emplace_back(buffers[i].count);
      pointers.push_back(data.back().data());
    }
  }

  shard::ShardPlan build(const std::vector<uint64_t>& counts, int world, int group, shard::ShardLevel level,
                         uint64_t chunk_bytes) {
    for (size_t i = 0; i < counts.size(); ++i) {
      buffers.push_back(
          BufferDesc{"p" + std::to_string(i), counts[i], PSDP_FLOAT32, Role::kParameter, MemoryKind::kHost, 0});
    }
    for (size_t i = 0; i < counts.size(); ++i) {
      buffers.push_back(
          BufferDesc{"g" + std::to_string(i), counts[i], PSDP_FLOAT32, Role::kGradient, MemoryKind::kHost, 0});
    }
    shard::PlanConfig config;
    config.world_size = world;
    config.group_size = group;
    config.level = level;
    config.chunk_bytes = chunk_bytes;
    config.align_bytes = 64;
    return shard::ShardPlan::build(buffers, config).value();
  }
};

TEST(ChunkPackingTest, TransfersGroupConsecutiveChunksOfASpace) {
  Fixture f({1000, 3001, 777}, 4, 2, shard::ShardLevel::kWorld, 1024);
  const size_t chunks = f.plan.chunks().size();
  for (size_t per : {size_t{1}, size_t{3}, size_t{0}}) {
    std::vector<Transfer> transfers = groupChunks(f.plan, per);
    std::vector<uint32_t> seen;
    for (const Transfer& t : transfers) {
      if (per != 0) {
        EXPECT_LE(t.chunks.size(), per);
      }
      uint64_t part = 0;
      for (size_t i = 0; i < t.chunks.size(); ++i) {
        EXPECT_EQ(t.offset[i], part);
        part += f.plan.chunks()[t.chunks[i]].padded_world_piece;
        seen.push_back(t.chunks[i]);
      }
      EXPECT_EQ(t.part, part);
      EXPECT_EQ(t.block, 2 * part) << "R = 2 parts per block at level world";
    }
    std::vector<uint32_t> all(chunks);
    std::iota(all.begin(), all.end(), 0u);
    EXPECT_EQ(seen, all) << "every chunk once, in order (" << per << " per transfer)";
    if (per == 0) {
      EXPECT_EQ(transfers.size(), 1u) << "one space: one bulk transfer";
    }
  }
}

// Packs a gradient whose value is its flat index + 1, checks every element's place, then stores the owned
// pieces back over zeroed gradients: exactly the owned ranges come back.
void checkRoundTrip(Fixture& f, int rank, size_t per) {
  const std::vector<Transfer> transfers = groupChunks(f.plan, per);
  ChunkPacking packing(f.plan, transfers, rank, f.pointers);
  const size_t nparams = f.buffers.size() / 2;
  for (size_t t = 0; t < transfers.size(); ++t) {
    for (size_t b = 0; b < nparams; ++b) {
      std::iota(f.data[nparams + b].begin(), f.data[nparams + b].end(), 1.0f + static_cast<float>(1000000 * b));
    }
    std::vector<float> pack(packing.packElems(t), -1.0f);
    packing.packGradients(t, reinterpret_cast<std::byte*>(pack.data()));
    size_t placed = 0;
    for (const PackedSegment& s : packing.segments(t)) placed += s.count;
    size_t nonzero = 0;
    for (float v : pack) nonzero += v != 0.0f ? 1 : 0;
    EXPECT_EQ(nonzero, placed) << "every element once, the padding zero (transfer " << t << ")";
    for (size_t b = 0; b < nparams; ++b) std::fill(f.data[nparams + b].begin(), f.data[nparams + b].end(), 0.0f);
    packing.storeOwnedGradients(t, reinterpret_cast<const std::byte*>(pack.data()));
    size_t stored = 0;
    for (uint32_t c : transfers[t].chunks) {
      for (const shard::OwnedRange& r : f.plan.ownedRanges(rank, c)) {
        const auto& g = f.data[nparams + static_cast<size_t>(r.buffer)];
        for (uint64_t i = r.offset; i < r.offset + r.count; ++i) {
          EXPECT_EQ(g[i], static_cast<float>(i + 1 + 1000000 * static_cast<uint64_t>(r.buffer)));
        }
        stored += r.count;
      }
    }
    size_t nonzero_grads = 0;
    for (size_t b = 0; b < nparams; ++b) {
      for (float v : f.data[nparams + b]) nonzero_grads += v != 0.0f ? 1 : 0;
    }
    EXPECT_EQ(nonzero_grads, stored) << "only the owned ranges are written";
  }
}

TEST(ChunkPackingTest, PackAndStoreRoundTripAtBothLevels) {
  for (auto level : {shard::ShardLevel::kGroup, shard::ShardLevel::kWorld}) {
    Fixture f({1000, 3001, 777}, 4, 2, level, 1024);
    for (int rank = 0; rank < 4; ++rank) {
      for (size_t per : {size_t{1}, size_t{2}, size_t{0}}) checkRoundTrip(f, rank, per);
    }
  }
}

TEST(ChunkPackingTest, OnlyFullChunksInsideOneBufferRunInPlace) {
  // 256 floats per chunk, G = 2, 16-float units: chunks [0, 256), ..., [768, 1024) across the two buffers,
  // [1024, 1280), and [1280, 1512) of 232 (pieces 112 and 120, padded to 128).
  Fixture f({1000, 512}, 2, 2, shard::ShardLevel::kGroup, 1024);
  const std::vector<Transfer> transfers = groupChunks(f.plan, 1);
  ChunkPacking packing(f.plan, transfers, 0, f.pointers);
  size_t in_place = 0;
  for (size_t t = 0; t < transfers.size(); ++t) {
    const shard::Chunk& c = f.plan.chunks()[transfers[t].chunks[0]];
    const bool full = c.count == 2 * c.padded_group_piece;
    const bool one_buffer = c.begin + c.count <= 1000 || c.begin >= 1000;
    const std::optional<InPlace> where = packing.inPlace(t);
    EXPECT_EQ(where.has_value(), full && one_buffer) << "chunk " << transfers[t].chunks[0] << " at " << c.begin;
    if (where) {
      ++in_place;
      const int param = c.begin < 1000 ? 0 : 1;
      const uint64_t offset = param == 0 ? c.begin : c.begin - 1000;
      EXPECT_EQ(where->parameters, reinterpret_cast<std::byte*>(f.data[static_cast<size_t>(param)].data() + offset));
      EXPECT_EQ(where->gradients, reinterpret_cast<std::byte*>(f.data[2 + static_cast<size_t>(param)].data() + offset));
    }
  }
  EXPECT_EQ(in_place, 4u) << "chunks 0, 1, 2 and 4";
  EXPECT_FALSE(ChunkPacking(f.plan, groupChunks(f.plan, 2), 0, f.pointers).inPlace(0)) << "two chunks: packed";
}

}  // namespace
}  // namespace psdp::engine
