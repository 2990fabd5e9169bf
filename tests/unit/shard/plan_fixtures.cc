#include "plan_fixtures.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace psdp::shard::testing {

PlanConfig config(int w, int g, ShardLevel level, uint64_t chunk_bytes, uint64_t align_bytes) {
  PlanConfig c;
  c.world_size = w;
  c.group_size = g;
  c.level = level;
  c.chunk_bytes = chunk_bytes;
  c.align_bytes = align_bytes;
  return c;
}

ShardPlan mustBuild(const std::vector<BufferDesc>& buffers, const PlanConfig& c) {
  auto plan = ShardPlan::build(buffers, c);
  EXPECT_TRUE(plan.isOk()) << plan.status().toString();
  return std::move(plan).value();
}
namespace {

uint64_t pick(std::mt19937_64& rng, uint64_t lo, uint64_t hi) {
  return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
}

uint64_t randomCount(std::mt19937_64& rng) {
  switch (pick(rng, 0, 9)) {
    case 0: return pick(rng, 1, 3);
    case 1: return pick(rng, 100'000, 3'000'000);
    case 2:
    case 3: return pick(rng, 1'000, 70'000);
    default: return pick(rng, 1, 600);
  }
}

constexpr psdp_dtype_t kParamDtypes[] = {PSDP_BFLOAT16, PSDP_FLOAT32, PSDP_FLOAT16, PSDP_INT8, PSDP_FLOAT64};

}  // namespace

std::vector<BufferDesc> randomBuffers(std::mt19937_64& rng, int max_params) {
  const int n = static_cast<int>(pick(rng, 1, max_params));
  const int kinds = static_cast<int>(pick(rng, 1, 3));  // how many (dtype, memory) mixes to draw from
  const bool grads = pick(rng, 0, 1) != 0;
  const bool wider_grads = pick(rng, 0, 2) == 0;
  std::vector<BufferDesc> params, out;
  for (int i = 0; i < n; ++i) {
    BufferDesc b;
    b.name = fmt::format("layer{}.weight", i);
    b.count = randomCount(rng);
    b.dtype = kParamDtypes[pick(rng, 0, kinds - 1)];
    b.memory = pick(rng, 0, kinds - 1) == 2 ? MemoryKind::kCuda : MemoryKind::kHost;
    b.device = static_cast<int>(pick(rng, 0, 7));  // differs per rank in real life; never part of the plan
    params.push_back(b);
  }
  auto gradient = [&](const BufferDesc& p) {
    BufferDesc g = p;
    g.name = p.name + ".grad";
    g.role = Role::kGradient;
    if (wider_grads && dtypeSize(p.dtype) < 4) g.dtype = PSDP_FLOAT32;  // e.g. bfloat16 weights, float32 grads
    return g;
  };
  const bool interleave = pick(rng, 0, 1) != 0;  // p0 g0 p1 g1 ... or all parameters, then all gradients
  for (const BufferDesc& p : params) {
    out.push_back(p);
    if (grads && interleave) out.push_back(gradient(p));
  }
  for (size_t i = 0; grads && !interleave && i < params.size(); ++i) out.push_back(gradient(params[i]));
  if (pick(rng, 0, 1)) {
    // Optimizer state may come anywhere; its count is decided by the plan and does not enter it.
    BufferDesc state{"adam.exp_avg", 1, PSDP_FLOAT32, Role::kOptimizerState, MemoryKind::kHost, 0};
    out.insert(out.begin() + static_cast<long>(pick(rng, 0, out.size())), state);
  }
  return out;
}

PlanConfig randomConfig(std::mt19937_64& rng, const std::vector<BufferDesc>& buffers) {
  static constexpr int kWorlds[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 64, 96, 256, 1024};
  PlanConfig c;
  c.world_size = kWorlds[pick(rng, 0, std::size(kWorlds) - 1)];
  std::vector<int> divisors;
  for (int g = 1; g <= c.world_size; ++g) {
    if (c.world_size % g == 0) divisors.push_back(g);
  }
  c.group_size = divisors[pick(rng, 0, divisors.size() - 1)];
  c.level = pick(rng, 0, 1) ? ShardLevel::kWorld : ShardLevel::kGroup;
  uint64_t widest = 1;
  for (const BufferDesc& b : buffers) {
    if (b.role != Role::kOptimizerState) widest = std::max(widest, dtypeSize(b.dtype));
  }
  c.align_bytes = widest << pick(rng, 0, 12 - std::countr_zero(widest));
  static constexpr uint64_t kChunks[] = {1, 1000, 4096, 65536, 1 << 20, 64 << 20, ~uint64_t{0}};
  c.chunk_bytes = kChunks[pick(rng, 0, std::size(kChunks) - 1)];
  // Tiny chunks over millions of elements make hundreds of thousands of chunks: valid, but slow to check.
  uint64_t total_bytes = 0;
  for (const BufferDesc& b : buffers) total_bytes += b.role == Role::kParameter ? b.count * dtypeSize(b.dtype) : 0;
  c.chunk_bytes = std::max(c.chunk_bytes, total_bytes / 2000);
  if (pick(rng, 0, 3) == 0) c.pad_bytes = c.align_bytes << pick(rng, 0, 3);
  if (pick(rng, 0, 2) == 0) {
    c.rank_layout.resize(c.world_size);
    std::iota(c.rank_layout.begin(), c.rank_layout.end(), 0);
    std::shuffle(c.rank_layout.begin(), c.rank_layout.end(), rng);
  }
  return c;
}

std::string describe(const PlanConfig& c) {
  return fmt::format("W={} G={} level={} chunk_bytes={} align_bytes={} pad_bytes={} layout={}", c.world_size,
                     c.group_size, c.level == ShardLevel::kWorld ? "world" : "group", c.chunk_bytes, c.align_bytes,
                     c.pad_bytes, c.rank_layout.empty() ? "contiguous" : "shuffled");
}

const std::vector<QwenModel>& qwenModels() {
  // From shared/models/qwen2.5.json: each model's config and the totals of its tensor list.
  static const std::vector<QwenModel> models = {
      {"Qwen2.5-0.5B", 896, 4864, 24, 14, 2, 151936, true, 494032768, 290},
      {"Qwen2.5-1.5B", 1536, 8960, 28, 12, 2, 151936, true, 1543714304, 338},
      {"Qwen2.5-3B", 2048, 11008, 36, 16, 2, 151936, true, 3085938688, 434},
      {"Qwen2.5-7B", 3584, 18944, 28, 28, 4, 152064, false, 7615616512, 339},
      {"Qwen2.5-14B", 5120, 13824, 48, 40, 8, 152064, false, 14770033664, 579},
      {"Qwen2.5-32B", 5120, 27648, 64, 40, 8, 152064, false, 32763876352, 771},
      {"Qwen2.5-72B", 8192, 29568, 80, 64, 8, 152064, false, 72706203648, 963},
  };
  return models;
}

std::vector<BufferDesc> qwenParameters(const QwenModel& m, bool with_grads) {
  const uint64_t h = m.hidden, kv = m.kv_heads * (m.hidden / m.heads), ff = m.intermediate;
  std::vector<std::pair<std::string, uint64_t>> tensors = {{"model.embed_tokens.weight", m.vocab * h}};
  for (uint64_t l = 0; l < m.layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    const std::pair<const char*, uint64_t> layer[] = {
        {"input_layernorm.weight", h},       {"self_attn.q_proj.weight", h * h}, {"self_attn.q_proj.bias", h},
        {"self_attn.k_proj.weight", kv * h}, {"self_attn.k_proj.bias", kv},      {"self_attn.v_proj.weight", kv * h},
        {"self_attn.v_proj.bias", kv},       {"self_attn.o_proj.weight", h * h}, {"post_attention_layernorm.weight", h},
        {"mlp.gate_proj.weight", ff * h},    {"mlp.up_proj.weight", ff * h},     {"mlp.down_proj.weight", h * ff}};
    for (const auto& [name, count] : layer) tensors.emplace_back(p + name, count);
  }
  tensors.emplace_back("model.norm.weight", h);
  if (!m.tie_embeddings) tensors.emplace_back("lm_head.weight", m.vocab * h);
  std::vector<BufferDesc> out;
  for (const auto& [name, count] : tensors) {
    out.push_back(BufferDesc{name, count, PSDP_BFLOAT16, Role::kParameter, MemoryKind::kHost, 0});
  }
  if (with_grads) {
    for (const auto& [name, count] : tensors) {
      out.push_back(BufferDesc{name + ".grad", count, PSDP_FLOAT32, Role::kGradient, MemoryKind::kHost, 0});
    }
  }
  return out;
}

}  // namespace psdp::shard::testing
