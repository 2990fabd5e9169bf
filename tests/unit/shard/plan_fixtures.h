// Buffer lists and configurations for the shard planner's tests: random ones from a seed, and the
// parameter shapes of the Qwen2.5 models.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "shard/plan_input.h"
#include "shard/shard_plan.h"

namespace psdp::shard::testing {

// A random buffer list: 1..max_params parameters with counts from 1 to a few million (mostly small), mixed
// dtypes and memory kinds, with or without paired gradients (sometimes of a wider dtype) and optimizer-state
// buffers. Reproducible from the generator's seed.
std::vector<BufferDesc> randomBuffers(std::mt19937_64& rng, int max_params);

// A random valid configuration for `buffers`: W in 1..1024, G a divisor, either level, chunk sizes from
// tiny (many chunks) to huge (one per space), alignments from the widest dtype up to 4 KiB, sometimes
// padding and a shuffled rank layout.
PlanConfig randomConfig(std::mt19937_64& rng, const std::vector<BufferDesc>& buffers);

// W ranks in groups of G at `level`, with small chunks and alignment so that small lists make many pieces.
PlanConfig config(int w, int g, ShardLevel level, uint64_t chunk_bytes = 1024, uint64_t align_bytes = 16);

// The plan of a list the test knows is valid. A failure is reported (EXPECT) before its value is taken.
ShardPlan mustBuild(const std::vector<BufferDesc>& buffers, const PlanConfig& c);

// One line describing a configuration, for failure messages.
std::string describe(const PlanConfig& config);

// A Qwen2.5 model: the config.json fields its tensor list follows, and what its published shape list
// (shared/models/qwen2.5.json) counts, so that qwenParameters() can be checked against it.
struct QwenModel {
  const char* name;
  uint64_t hidden, intermediate, layers, heads, kv_heads, vocab;
  bool tie_embeddings;
  uint64_t num_parameters;
  size_t num_tensors;
};
const std::vector<QwenModel>& qwenModels();

// The model's parameter tensors in module order, as bfloat16 host parameters, with float32 gradients
// when `with_grads`.
std::vector<BufferDesc> qwenParameters(const QwenModel& model, bool with_grads);

}  // namespace psdp::shard::testing
