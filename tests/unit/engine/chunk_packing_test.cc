// ChunkPacking on real plans: transfers group consecutive chunks of one space; every element of a transfer's
// chunks has exactly one place in its pack buffer, inside the right block (and part), never in another
// piece's padding; gradients packed and the owned ones stored back land where they came from; and exactly
// the chunks inside one buffer with full pieces run in place. Mixed precision: bfloat16 gradients widened
// into float32 pack buffers (never in place then), the owned pieces delivered into a float32 gradient shard
// at the rank's shard-file offsets, or rounded back into the gradient buffers without one.
#include "engine/chunk_packing.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
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
  ChunkPacking packing(f.plan, transfers, rank, f.pointers, /*float32_partials=*/false);
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
    packing.deliverOwnedGradients(t, reinterpret_cast<const std::byte*>(pack.data()));
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
  ChunkPacking packing(f.plan, transfers, 0, f.pointers, false);
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
  EXPECT_FALSE(ChunkPacking(f.plan, groupChunks(f.plan, 2), 0, f.pointers, false).inPlace(0)) << "two chunks: packed";
}

// bfloat16 parameters and gradients, and a float32 gradient shard sized for `rank`.
struct MixedFixture {
  std::vector<BufferDesc> buffers;
  std::vector<std::vector<uint16_t>> data;  // parameters, then gradients
  std::vector<float> shard;
  std::vector<void*> pointers;
  shard::ShardPlan plan;

  MixedFixture(const std::vector<uint64_t>& counts, int world, int rank, shard::ShardLevel level, bool with_shard)
      : plan(build(counts, world, level, with_shard)) {
    for (const BufferDesc& b : buffers) {
      if (b.role == Role::kGradientShard) {
        shard.assign(plan.ownedCount(rank), -1.0f);
        pointers.push_back(shard.data());
      } else {
        data.emplace_back(b.count);
        pointers.push_back(data.back().data());
      }
    }
  }

  shard::ShardPlan build(const std::vector<uint64_t>& counts, int world, shard::ShardLevel level, bool with_shard) {
    for (Role role : {Role::kParameter, Role::kGradient}) {
      for (size_t i = 0; i < counts.size(); ++i) {
        buffers.push_back(BufferDesc{(role == Role::kGradient ? "g" : "p") + std::to_string(i), counts[i],
                                     PSDP_BFLOAT16, role, MemoryKind::kHost, 0});
      }
    }
    if (with_shard)
      buffers.push_back(BufferDesc{"main_grad", 0, PSDP_FLOAT32, Role::kGradientShard, MemoryKind::kHost, 0});
    shard::PlanConfig config;
    config.world_size = world;
    config.group_size = 2;
    config.level = level;
    config.chunk_bytes = 1024;
    config.align_bytes = 64;
    return shard::ShardPlan::build(buffers, config).value();
  }
};

// The bfloat16 of a small integer (exact), and back.
uint16_t bf16Of(float f) {
  return static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16);
}
float floatOf(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

// Gradient element i of buffer b: an integer below 256, exact in bfloat16.
float gradientValue(size_t b, uint64_t i) {
  return static_cast<float>((i * 7 + b * 31) % 255) - 127.0f;
}

TEST(ChunkPackingTest, Float32PartialsWidenIntoTheGradientShard) {
  for (auto level : {shard::ShardLevel::kGroup, shard::ShardLevel::kWorld}) {
    for (int rank = 0; rank < 4; ++rank) {
      MixedFixture f({1000, 3001, 512}, 4, rank, level, /*with_shard=*/true);
      const size_t nparams = 3;
      for (size_t b = 0; b < nparams; ++b) {
        for (uint64_t i = 0; i < f.data[nparams + b].size(); ++i) f.data[nparams + b][i] = bf16Of(gradientValue(b, i));
      }
      const std::vector<Transfer> transfers = groupChunks(f.plan, 1);
      ChunkPacking packing(f.plan, transfers, rank, f.pointers, /*float32_partials=*/true);
      EXPECT_EQ(packing.packedReductions(), transfers.size()) << "every reduction widened: none in place";
      for (size_t t = 0; t < transfers.size(); ++t) {
        EXPECT_EQ(packing.reduceDtype(t), PSDP_FLOAT32);
        EXPECT_FALSE(packing.reducesInPlace(t));
        std::vector<float> pack(packing.packElems(t), -1.0f);
        packing.packGradients(t, reinterpret_cast<std::byte*>(pack.data()));
        // Widened exactly: the pack sums to the chunk's gradients (integers, so the float sums are exact).
        double packed = 0, want = 0;
        for (float v : pack) packed += v;
        const shard::Space& space = f.plan.spaces()[0];
        for (uint32_t c : transfers[t].chunks) {
          for (uint64_t x = f.plan.chunks()[c].begin; x < f.plan.chunks()[c].begin + f.plan.chunks()[c].count; ++x) {
            size_t slot = 0;
            while (space.starts[slot + 1] <= x) ++slot;
            want += gradientValue(static_cast<size_t>(space.buffers[slot]), x - space.starts[slot]);
          }
        }
        EXPECT_EQ(packed, want) << "transfer " << t;
        packing.deliverOwnedGradients(t, reinterpret_cast<const std::byte*>(pack.data()));
      }
      // The shard holds every owned gradient, widened, in shard-file order.
      uint64_t at = 0;
      size_t bad = 0;
      for (const shard::OwnedRange& r : f.plan.ownedRanges(rank)) {
        for (uint64_t i = r.offset; i < r.offset + r.count; ++i, ++at) {
          bad += f.shard[at] != gradientValue(static_cast<size_t>(r.buffer), i) ? 1 : 0;
        }
      }
      EXPECT_EQ(at, f.shard.size());
      EXPECT_EQ(bad, 0u) << "rank " << rank;
      for (size_t c = 0; c < f.plan.chunks().size(); ++c) {
        const std::vector<GradientRun> runs = packing.ownedGradients(static_cast<uint32_t>(c));
        ASSERT_EQ(runs.size(), 1u);
        EXPECT_EQ(runs[0].dtype, PSDP_FLOAT32);
        EXPECT_EQ(runs[0].data, reinterpret_cast<const std::byte*>(f.shard.data() + f.plan.shardOffset(rank, c)));
        EXPECT_EQ(runs[0].count, f.plan.ownedCount(rank, c));
      }
    }
  }
}

TEST(ChunkPackingTest, GradientDtypePartialsReduceInPlaceAndWidenOnDelivery) {
  // 1024-byte chunks of bfloat16: 512 elements, G = 2 pieces of 256, full and inside buffer 0 for chunk 0.
  MixedFixture f({1024, 100}, 2, 0, shard::ShardLevel::kGroup, /*with_shard=*/true);
  for (uint64_t i = 0; i < 1024; ++i) f.data[2][i] = bf16Of(gradientValue(0, i));
  const std::vector<Transfer> transfers = groupChunks(f.plan, 1);
  ChunkPacking packing(f.plan, transfers, 0, f.pointers, /*float32_partials=*/false);
  ASSERT_TRUE(packing.inPlace(0).has_value());
  EXPECT_TRUE(packing.reducesInPlace(0));
  EXPECT_EQ(packing.reduceDtype(0), PSDP_BFLOAT16);
  packing.deliverOwnedGradients(0, packing.inPlace(0)->gradients);
  for (uint64_t i = 0; i < f.plan.ownedCount(0, 0); ++i) EXPECT_EQ(f.shard[i], gradientValue(0, i));
}

TEST(ChunkPackingTest, Float32PartialsWithoutAShardRoundBackIntoTheGradients) {
  MixedFixture f({1000, 3001}, 2, 1, shard::ShardLevel::kGroup, /*with_shard=*/false);
  const std::vector<Transfer> transfers = groupChunks(f.plan, 1);
  ChunkPacking packing(f.plan, transfers, 1, f.pointers, /*float32_partials=*/true);
  for (size_t t = 0; t < transfers.size(); ++t) {
    // A reduced pack of 1.5 + its index: each owned element rounds to bfloat16 on its way back.
    std::vector<float> pack(packing.packElems(t));
    for (size_t i = 0; i < pack.size(); ++i) pack[i] = 1.5f + static_cast<float>(i);
    packing.deliverOwnedGradients(t, reinterpret_cast<const std::byte*>(pack.data()));
    for (const PackedSegment& s : packing.ownedSegments(t)) {
      for (const shard::OwnedRange& r : f.plan.ownedRanges(1, s.chunk)) {
        const uint64_t packed =
            s.packed + (f.plan.spaceOffset(r.buffer) + r.offset - f.plan.chunks()[s.chunk].begin - s.chunk_offset);
        for (uint64_t i = 0; i < r.count; ++i) {
          const float want = pack[packed + i];
          const float got = floatOf(f.data[2 + static_cast<size_t>(r.buffer)][r.offset + i]);
          EXPECT_LE(std::abs(got - want), std::abs(want) / 256) << "rounded to bfloat16";
        }
      }
    }
  }
}

}  // namespace
}  // namespace psdp::engine
