#include "step_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

namespace psdp::perf {

using tools::loadModelShapes;
using tools::ModelShapes;
using tools::TensorShape;

namespace {

// A chunk size larger than any space: one chunk per space.
constexpr size_t kWholeSpace = size_t{1} << 62;

}  // namespace

std::vector<TensorShape> stepTensors(const StepOptions& o, std::string* model, std::string* model_path,
                                     std::string* error) {
  if (o.bytes != 0) {
    *model = "one tensor";
    return {TensorShape{"w", {o.bytes / 4}, o.bytes / 4}};
  }
  std::string path = o.model_path;
  if (path.empty()) {
    char exe[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    std::string installed = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
    installed = installed.substr(0, installed.rfind('/') + 1) + PSDP_PERF_MODEL_FROM_BIN;
    for (const std::string& candidate : {installed, std::string(PSDP_PERF_MODEL_SOURCE)}) {
      if (std::FILE* f = std::fopen(candidate.c_str(), "r")) {
        std::fclose(f);
        path = candidate;
        break;
      }
    }
  }
  *model_path = path;
  std::optional<ModelShapes> shapes = loadModelShapes(path, o.model_name, error);
  if (!shapes) return {};
  *model = shapes->name;
  for (TensorShape& t : shapes->tensors) {
    t.shape[0] = std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(t.shape[0]) * o.scale));
    t.numel = 1;
    for (uint64_t d : t.shape) t.numel *= d;
  }
  return shapes->tensors;
}

int ranksOnHost(psdp_comm_h comm) {
  int nranks = 1;
  psdp_comm_size(comm, &nranks);
  char name[64] = {};
  gethostname(name, sizeof(name) - 1);
  std::vector<char> all(sizeof(name) * static_cast<size_t>(nranks));
  STEP_CHECK(psdp_all_gather(name, all.data(), sizeof(name), PSDP_UINT8, comm, nullptr, nullptr));
  int same = 0;
  for (int r = 0; r < nranks; ++r)
    same += std::strncmp(name, &all[sizeof(name) * static_cast<size_t>(r)], sizeof(name)) == 0;
  return same;
}

Registration::~Registration() {
  if (plan != nullptr) psdp_plan_free(plan);
  if (state != nullptr) psdp_state_deregister(state);
}

StepBench::StepBench(const StepOptions& o, psdp_comm_h comm)
    : o_(o), comm_(comm), window_(o.window), grouping_(o.grouping), online_(o.online) {
  psdp_comm_rank(comm, &rank_);
  psdp_comm_size(comm, &nranks_);
  group_ = o_.group == 0 ? nranks_ : o_.group;
  elem_bytes_ = o_.mixed ? 2 : 4;
}

bool StepBench::setUp(const std::vector<TensorShape>& tensors) {
  const size_t unit = 256 / elem_bytes_;  // elements of the plan's default 256-byte alignment
  size_t total = 0;
  for (const TensorShape& t : tensors) total += (t.numel + unit - 1) / unit * unit;
  if (!o_.per_tensor) {
    const size_t grain = unit * static_cast<size_t>(nranks_);
    total = (total + grain - 1) / grain * grain;
  }
  params_ = std::make_unique<HostBuffer>(total * elem_bytes_, true, o_.shared_buffers);
  grads_ = std::make_unique<HostBuffer>(total * elem_bytes_, true, o_.shared_buffers);
  if (params_->data() == nullptr || grads_->data() == nullptr) return false;
  if (o_.per_tensor) {
    size_t at = 0;
    for (const TensorShape& t : tensors) {
      param_ptrs_.push_back(reinterpret_cast<std::byte*>(params_->data()) + at * elem_bytes_);
      grad_ptrs_.push_back(reinterpret_cast<std::byte*>(grads_->data()) + at * elem_bytes_);
      counts_.push_back(t.numel);
      names_.push_back(t.name);
      at += (t.numel + unit - 1) / unit * unit;
    }
  } else {
    param_ptrs_.push_back(reinterpret_cast<std::byte*>(params_->data()));
    grad_ptrs_.push_back(reinterpret_cast<std::byte*>(grads_->data()));
    counts_.push_back(total);
    names_.push_back("params");
  }
  const psdp_dtype_t dtype = o_.mixed ? PSDP_BFLOAT16 : PSDP_FLOAT32;
  for (size_t i = 0; i < counts_.size(); ++i) {
    elements_ += counts_[i];
    fillOnes(param_ptrs_[i], 0, counts_[i]);
    fillOnes(grad_ptrs_[i], 0, counts_[i]);
    grad_names_.push_back(names_[i] + ".grad");
  }
  for (size_t i = 0; i < counts_.size(); ++i) {
    descs_.push_back(
        {names_[i].c_str(), param_ptrs_[i], counts_[i], dtype, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0});
  }
  for (size_t i = 0; i < counts_.size(); ++i) {
    descs_.push_back(
        {grad_names_[i].c_str(), grad_ptrs_[i], counts_[i], dtype, PSDP_BUFFER_GRADIENT, PSDP_MEMORY_HOST, 0});
  }
  layout_.resize(static_cast<size_t>(nranks_));
  STEP_CHECK(psdp_comm_get_layout(comm_, group_, layout_.data()));
  // The optimizer state is sized from each plan, which does not depend on it (psdp.h, "Registered state");
  // both registrations share its memory, sized for the larger.
  const size_t bulk_chunk_bytes = o_.bulk_chunked ? o_.chunk_bytes : kWholeSpace;
  const size_t pipelined_owned = ownedBy(o_.chunk_bytes), bulk_owned = ownedBy(bulk_chunk_bytes);
  // Adam's moments, and with mixed precision the master weights and the gradient shard.
  const size_t per_element = (o_.adam ? 2 : 0) + (o_.mixed ? 2 : 0);
  if (per_element > 0) {
    const size_t most = (std::max(pipelined_owned, bulk_owned) + 1023) / 1024 * 1024;
    owned_state_ = std::make_unique<HostBuffer>(per_element * most * 4, true, false);
    if (owned_state_->data() == nullptr) return false;
    float* next = reinterpret_cast<float*>(owned_state_->data());
    auto take = [&] { return std::exchange(next, next + most); };
    if (o_.adam) {
      m_ = take();
      v_ = take();
    }
    if (o_.mixed) {
      master_ = take();
      grad_shard_ = take();
      std::fill(master_, master_ + most, 1.0f);
    }
  }
  if (o_.pipelined) registerState(o_.chunk_bytes, pipelined_owned, pipelined_);
  if (o_.bulk) registerState(bulk_chunk_bytes, bulk_owned, bulk_);
  return true;
}

double StepBench::run(StepMode mode) {
  ++adam_.step;
  STEP_CHECK(psdp_barrier(comm_, nullptr));
  const auto start = std::chrono::steady_clock::now();
  const Registration& r = of(mode);
  if (mode == kUpdateOnly) {
    for (size_t c = 0; c < r.chunks; ++c) update(r, c, r.owned_ranges[c].data(), r.owned_ranges[c].size());
  } else {
    step(r, mode);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

const Registration& StepBench::of(StepMode mode) const {
  if (mode == kBulk || (mode != kPipelined && !o_.pipelined)) return bulk_;
  return pipelined_;
}

psdp_plan_config_t StepBench::planConfig(size_t chunk_bytes) const {
  psdp_plan_config_t config = PSDP_PLAN_CONFIG_INITIALIZER;
  config.group_size = group_;
  config.level = o_.world_level ? PSDP_SHARD_LEVEL_WORLD : PSDP_SHARD_LEVEL_GROUP;
  config.chunk_bytes = chunk_bytes;
  return config;
}

size_t StepBench::ownedBy(size_t chunk_bytes) const {
  const psdp_plan_config_t config = planConfig(chunk_bytes);
  psdp_plan_h plan = nullptr;
  STEP_CHECK(psdp_plan_create(descs_.data(), static_cast<int>(descs_.size()), nranks_, layout_.data(), &config, &plan));
  size_t owned = 0;
  STEP_CHECK(psdp_plan_optimizer_state_count(plan, rank_, &owned));
  psdp_plan_free(plan);
  return owned;
}

void StepBench::registerState(size_t chunk_bytes, size_t owned, Registration& r) {
  std::vector<psdp_buffer_desc_t> descs = descs_;
  if (o_.adam) {
    descs.push_back({"adam.m", m_, owned, PSDP_FLOAT32, PSDP_BUFFER_OPTIMIZER_STATE, PSDP_MEMORY_HOST, 0});
    descs.push_back({"adam.v", v_, owned, PSDP_FLOAT32, PSDP_BUFFER_OPTIMIZER_STATE, PSDP_MEMORY_HOST, 0});
  }
  if (o_.mixed) {
    descs.push_back({"master", master_, owned, PSDP_FLOAT32, PSDP_BUFFER_OPTIMIZER_STATE, PSDP_MEMORY_HOST, 0});
    descs.push_back({"main_grad", grad_shard_, owned, PSDP_FLOAT32, PSDP_BUFFER_GRADIENT_SHARD, PSDP_MEMORY_HOST, 0});
  }
  const psdp_plan_config_t config = planConfig(chunk_bytes);
  STEP_CHECK(psdp_state_register(comm_, descs.data(), static_cast<int>(descs.size()), &config, &r.state));
  STEP_CHECK(psdp_state_get_plan(r.state, &r.plan));
  STEP_CHECK(psdp_plan_chunk_count(r.plan, &r.chunks));
  r.owned = owned;
  // Where each chunk's owned elements start in the optimizer state: the shard file's order.
  r.state_offset.assign(r.chunks + 1, 0);
  for (size_t c = 0; c < r.chunks; ++c) {
    size_t n = 0;
    STEP_CHECK(psdp_plan_owned_count(r.plan, rank_, c, &n));
    r.state_offset[c + 1] = r.state_offset[c] + n;
    STEP_CHECK(psdp_plan_owned_ranges(r.plan, rank_, c, nullptr, 0, &n));
    std::vector<psdp_owned_range_t> ranges(n);
    STEP_CHECK(psdp_plan_owned_ranges(r.plan, rank_, c, ranges.data(), n, &n));
    r.owned_ranges.push_back(std::move(ranges));
  }
}

// Backward's gradients of one bucket (or the initial values): ones, whose average stays one.
void StepBench::fillOnes(std::byte* buffer, size_t begin, size_t end) const {
  if (o_.mixed) {
    fillU16(reinterpret_cast<uint16_t*>(buffer) + begin, end - begin, uint16_t{0x3f80});  // bfloat16 1.0
  } else {
    fillFloat(reinterpret_cast<float*>(buffer) + begin, end - begin, 1.0f);
  }
}

void StepBench::optimizerUpdate(float* p, const float* g, size_t at, size_t n) {
  if (o_.adam) {
    adamUpdate(p, g, m_ + at, v_ + at, n, adam_);
  } else {
    sgdUpdate(p, g, n, 1e-4f);
  }
}

// The owned pieces of the chunk: in place on float32 parameters; with mixed precision, on the master
// weights from the gradient shard (one run: the chunk's owned elements follow one another there), then
// rounded into the parameters.
void StepBench::update(const Registration& reg, size_t chunk, const psdp_owned_range_t* ranges, size_t nranges) {
  size_t at = reg.state_offset[chunk];
  if (o_.mixed) {
    optimizerUpdate(master_ + at, grad_shard_ + at, at, reg.state_offset[chunk + 1] - at);
    for (size_t r = 0; r < nranges; ++r) {
      auto* p = reinterpret_cast<uint16_t*>(param_ptrs_[static_cast<size_t>(ranges[r].buffer)]) + ranges[r].offset;
      roundToBf16(p, master_ + at, ranges[r].count);
      at += ranges[r].count;
    }
    return;
  }
  for (size_t r = 0; r < nranges; ++r) {
    float* p = reinterpret_cast<float*>(param_ptrs_[static_cast<size_t>(ranges[r].buffer)]) + ranges[r].offset;
    const float* g =
        reinterpret_cast<const float*>(grad_ptrs_[static_cast<size_t>(ranges[r].buffer)]) + ranges[r].offset;
    optimizerUpdate(p, g, at, ranges[r].count);
    at += ranges[r].count;
  }
}

// Takes the reduced chunks there are (waiting up to timeout_s for the first) and updates each.
size_t StepBench::updateReduced(const Registration& reg, psdp_step_h step, double timeout_s, bool apply) {
  size_t updated = 0;
  while (true) {
    psdp_step_chunk_t chunk = PSDP_STEP_CHUNK_INITIALIZER;
    STEP_CHECK(psdp_step_next_chunk(step, updated == 0 ? timeout_s : 0.0, &chunk));
    if (chunk.chunk == PSDP_STEP_NO_CHUNK) return updated;
    if (apply) update(reg, chunk.chunk, chunk.ranges, chunk.nranges);
    STEP_CHECK(psdp_step_chunk_updated(step, chunk.chunk));
    ++updated;
  }
}

// Backward writes and reports gradients a bucket (--chunk-bytes) at a time, last element first, as hooks
// report buckets; chunks reduced meanwhile are updated at once (bulk mode hands out none until all are
// reduced). Comm only skips the update.
void StepBench::step(const Registration& reg, StepMode mode) {
  psdp_step_config_t config = PSDP_STEP_CONFIG_INITIALIZER;
  config.reduce_window = config.gather_window = window_;
  config.mode = &reg == &bulk_ ? PSDP_STEP_BULK : PSDP_STEP_PIPELINED;
  config.chunks_per_transfer = grouping_;
  config.fragment_bytes = o_.fragment;
  config.online_tuning = online_ && &reg == &pipelined_ ? 1 : 0;
  config.op = PSDP_AVG;  // the gradients are alike on every rank: their average stays 1
  config.gather_order = o_.gather_forward ? PSDP_STEP_ORDER_FORWARD : PSDP_STEP_ORDER_BACKWARD;
  config.partial_sums = o_.bf16_partials ? PSDP_PARTIALS_GRADIENT_DTYPE : PSDP_PARTIALS_DEFAULT;
  psdp_step_h step = nullptr;
  STEP_CHECK(psdp_step_begin(reg.state, &config, &step));
  const size_t bucket = std::max<size_t>(1, (o_.chunk_bytes == 0 ? size_t{64} << 20 : o_.chunk_bytes) / elem_bytes_);
  const auto pause = std::chrono::duration<double, std::milli>(o_.backward_ms * static_cast<double>(bucket) /
                                                               static_cast<double>(elements_));
  const bool apply = mode != kCommOnly;
  size_t done = 0;
  for (size_t b = counts_.size(); b-- > 0;) {
    for (size_t end = counts_[b]; end > 0;) {
      const size_t begin = end > bucket ? end - bucket : 0;
      if (o_.backward_ms > 0) std::this_thread::sleep_for(pause);
      fillOnes(grad_ptrs_[b], begin, end);
      STEP_CHECK(psdp_step_grads_ready(step, static_cast<int>(b), begin, end - begin));
      if (o_.update_during_backward) done += updateReduced(reg, step, 0.0, apply);
      end = begin;
    }
  }
  STEP_CHECK(psdp_step_backward_done(step));
  while (done < reg.chunks) done += updateReduced(reg, step, 60.0, apply);
  STEP_CHECK(psdp_step_end(step));
}

}  // namespace psdp::perf
