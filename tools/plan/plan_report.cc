#include "plan_report.h"

#include <algorithm>
#include <numeric>
#include <queue>

namespace psdp::tools {

uint64_t SchemeReport::maxOwned() const {
  return owned.empty() ? 0 : *std::max_element(owned.begin(), owned.end());
}

double SchemeReport::meanOwned() const {
  if (owned.empty()) return 0;
  return static_cast<double>(std::accumulate(owned.begin(), owned.end(), uint64_t{0})) / owned.size();
}

double SchemeReport::imbalance() const {
  const double mean = meanOwned();
  return mean > 0 ? maxOwned() / mean : 1.0;
}

namespace {

const char* levelName(psdp_shard_level_t level) {
  return level == PSDP_SHARD_LEVEL_WORLD ? "world" : "group";
}

int shardsAt(const PlanOptions& o, psdp_shard_level_t level) {
  return level == PSDP_SHARD_LEVEL_WORLD || o.group_size == 0 ? o.world_size : o.group_size;
}

// The rank's position among the N ranks that share the state: contiguous shard groups, as psdp's default.
int shardOf(int rank, int shards) {
  return rank % shards;
}

class Plan {
 public:
  ~Plan() {
    if (plan_ != nullptr) psdp_plan_free(plan_);
  }
  psdp_plan_h* out() { return &plan_; }
  psdp_plan_h get() const { return plan_; }

 private:
  psdp_plan_h plan_ = nullptr;
};

bool psdpScheme(const ModelShapes& model, const PlanOptions& o, psdp_shard_level_t level, SchemeReport* out,
                uint64_t* hash, std::string* error) {
  std::vector<psdp_buffer_desc_t> descs;
  std::vector<std::string> grad_names;
  for (const TensorShape& t : model.tensors) {
    descs.push_back({t.name.c_str(), nullptr, t.numel, o.param_dtype, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0});
  }
  if (o.with_grads) {
    for (const TensorShape& t : model.tensors) grad_names.push_back(t.name + ".grad");
    for (size_t i = 0; i < model.tensors.size(); ++i) {
      descs.push_back({grad_names[i].c_str(), nullptr, model.tensors[i].numel, o.grad_dtype, PSDP_BUFFER_GRADIENT,
                       PSDP_MEMORY_HOST, 0});
    }
  }
  psdp_plan_config_t config = PSDP_PLAN_CONFIG_INITIALIZER;
  config.group_size = o.group_size;
  config.level = level;
  config.chunk_bytes = o.chunk_bytes;
  config.align_bytes = o.align_bytes;
  config.pad_bytes = o.pad_bytes;
  Plan plan;
  if (psdp_plan_create(descs.data(), static_cast<int>(descs.size()), o.world_size, nullptr, &config, plan.out()) !=
      PSDP_SUCCESS) {
    *error = psdp_get_last_error(nullptr);
    return false;
  }
  // The queries below cannot fail on a live plan with indices it reported itself.
  psdp_plan_hash(plan.get(), hash);
  psdp_plan_chunk_count(plan.get(), &out->chunks);
  const uint64_t parts = shardsAt(o, level);
  for (size_t c = 0; c < out->chunks; ++c) {
    psdp_plan_chunk_t chunk;
    psdp_plan_get_chunk(plan.get(), c, &chunk);
    const size_t piece = level == PSDP_SHARD_LEVEL_WORLD ? chunk.padded_world_piece : chunk.padded_group_piece;
    out->padding += parts * piece - chunk.count;
  }
  for (int r = 0; r < o.world_size; ++r) {
    size_t n = 0;
    psdp_plan_optimizer_state_count(plan.get(), r, &n);
    out->owned.push_back(n);
  }
  return true;
}

void zeroScheme(const ModelShapes& model, const PlanOptions& o, int shards, SchemeReport* out) {
  std::vector<size_t> order(model.tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return model.tensors[a].numel > model.tensors[b].numel; });
  // (load, shard): the least-loaded shard, the lowest index among equals.
  std::priority_queue<std::pair<uint64_t, int>, std::vector<std::pair<uint64_t, int>>, std::greater<>> heap;
  for (int s = 0; s < shards; ++s) heap.push({0, s});
  std::vector<uint64_t> load(shards, 0);
  for (size_t i : order) {
    auto [l, s] = heap.top();
    heap.pop();
    load[s] = l + model.tensors[i].numel;
    heap.push({load[s], s});
  }
  for (int r = 0; r < o.world_size; ++r) out->owned.push_back(load[shardOf(r, shards)]);
  out->chunks = model.tensors.size();
}

void fsdp2Scheme(const ModelShapes& model, const PlanOptions& o, int shards, SchemeReport* out) {
  uint64_t per_rank = 0;
  for (const TensorShape& t : model.tensors) {
    const uint64_t rows = (t.shape[0] + shards - 1) / shards;
    const uint64_t row = t.numel / t.shape[0];
    per_rank += rows * row;
    out->padding += rows * row * shards - t.numel;
  }
  out->owned.assign(o.world_size, per_rank);
  out->chunks = model.tensors.size();
}

}  // namespace

bool buildPlanReport(const ModelShapes& model, const PlanOptions& o, PlanReport* report, std::string* error) {
  report->model = model.name;
  report->tensors = model.tensors.size();
  report->parameters = 0;
  for (const TensorShape& t : model.tensors) report->parameters += t.numel;
  for (const char* scheme : {"psdp", "zero", "fsdp2"}) {
    for (psdp_shard_level_t level : o.levels) {
      SchemeReport s;
      s.scheme = scheme;
      s.level = levelName(level);
      s.shards = shardsAt(o, level);
      if (s.scheme == "psdp") {
        uint64_t hash = 0;
        if (!psdpScheme(model, o, level, &s, &hash, error)) return false;
        if (report->schemes.empty()) report->plan_hash = hash;
      } else if (s.scheme == "zero") {
        zeroScheme(model, o, s.shards, &s);
      } else {
        fsdp2Scheme(model, o, s.shards, &s);
      }
      report->schemes.push_back(std::move(s));
    }
  }
  return true;
}

}  // namespace psdp::tools
