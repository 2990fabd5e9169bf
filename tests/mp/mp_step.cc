// Sharded training steps across real processes, the test playing the framework: every rank writes integer
// gradients (exact float sums), reports them ready in its own random order and granularity (sometimes
// "all at once"), takes the reduced chunks psdp hands out, updates its owned ranges with SGD or Adam, and
// marks them updated; the parameters must then equal a single-process reference bit for bit on every rank,
// after every step. Also: the owned gradients equal the reduced sum when handed out; parameter waits before
// the end; a collective of the user's on the world communicator in the middle of a step; unused gradients
// (one rank never reports a buffer in one step, with unused gradients treated as zero).
// With --over-time, backward is simulated: gradients are reported from the last element to the first, 1 ms
// of "compute" apart, and the first chunks must be reduced and handed out before the last gradients are.
//   mp_step [--group G] [--level group|world] [--window N] [--chunk-bytes B] [--steps S] [--adam]
//           [--update-after-all] [--forward-reductions] [--unused] [--over-time] [--bulk] [--group-chunks N]
#include <psdp/psdp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

struct Options {
  int group = 0;  // 0: W
  bool world_level = false;
  size_t window = 2;
  size_t chunk_bytes = 4096;
  int steps = 3;
  bool adam = false;
  bool update_after_all = false;
  bool forward_reductions = false;
  bool unused = false;
  bool over_time = false;
  bool bulk = false;
  size_t chunks_per_transfer = 0;  // 0: the default (1)
};

// Counts that neither the chunk nor the alignment divides.
const std::vector<size_t> kCounts = {1000, 3001, 777, 4101};
constexpr float kLearningRate = 0.125f;
// The buffer rank 0 never reports in step 1 with --unused.
constexpr size_t kUnusedBuffer = 2;
constexpr int kUnusedStep = 1;

float initialParameter(size_t b, size_t i) {
  return static_cast<float>((b * 17 + i) % 13);
}

float gradientOf(int rank, size_t b, size_t i, int step) {
  return static_cast<float>(
      static_cast<int>((b * 131 + i * 7 + static_cast<size_t>(rank) * 3 + static_cast<size_t>(step) * 5) % 11) - 5);
}

bool unusedAt(const Options& o, int rank, size_t b, int step) {
  return o.unused && rank == 0 && b == kUnusedBuffer && step == kUnusedStep;
}

// The one update rule, for the framework's owned ranges and for the reference alike.
void update(bool adam, float& p, float& m, float& v, float g) {
  if (!adam) {
    p -= kLearningRate * g;
    return;
  }
  m = 0.5f * m + 0.5f * g;
  v = 0.75f * v + 0.25f * g * g;
  p -= kLearningRate * m / (std::sqrt(v) + 1.0f);
}

struct Model {
  std::vector<std::vector<float>> params, grads;
  std::vector<float> adam_m, adam_v;  // this rank's owned elements, in shard-file order
  std::vector<psdp_buffer_desc_t> descs;

  Model() {
    for (size_t b = 0; b < kCounts.size(); ++b) {
      params.emplace_back(kCounts[b]);
      grads.emplace_back(kCounts[b]);
      for (size_t i = 0; i < kCounts[b]; ++i) params[b][i] = initialParameter(b, i);
    }
    names.resize(2 * kCounts.size());
    for (size_t b = 0; b < kCounts.size(); ++b) {
      names[b] = "w" + std::to_string(b);
      descs.push_back(
          {names[b].c_str(), params[b].data(), kCounts[b], PSDP_FLOAT32, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0});
    }
    for (size_t b = 0; b < kCounts.size(); ++b) {
      names[kCounts.size() + b] = "w" + std::to_string(b) + ".grad";
      descs.push_back({names[kCounts.size() + b].c_str(), grads[b].data(), kCounts[b], PSDP_FLOAT32,
                       PSDP_BUFFER_GRADIENT, PSDP_MEMORY_HOST, 0});
    }
  }
  std::vector<std::string> names;
};

// The single-process reference: every element's summed gradient and update, step by step.
struct Reference {
  std::vector<std::vector<float>> params, m, v;
  explicit Reference() {
    for (size_t b = 0; b < kCounts.size(); ++b) {
      params.emplace_back(kCounts[b]);
      m.emplace_back(kCounts[b], 0.0f);
      v.emplace_back(kCounts[b], 0.0f);
      for (size_t i = 0; i < kCounts[b]; ++i) params[b][i] = initialParameter(b, i);
    }
  }
  static float summed(const Options& o, int nranks, size_t b, size_t i, int step) {
    float sum = 0;
    for (int r = 0; r < nranks; ++r) sum += unusedAt(o, r, b, step) ? 0.0f : gradientOf(r, b, i, step);
    return sum;
  }
  void step(const Options& o, int nranks, int step) {
    for (size_t b = 0; b < kCounts.size(); ++b) {
      for (size_t i = 0; i < kCounts[b]; ++i)
        update(o.adam, params[b][i], m[b][i], v[b][i], summed(o, nranks, b, i, step));
    }
  }
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
    if (a == "--group")
      o.group = std::stoi(next());
    else if (a == "--level")
      o.world_level = next() == "world";
    else if (a == "--window")
      o.window = std::stoul(next());
    else if (a == "--chunk-bytes")
      o.chunk_bytes = std::stoul(next());
    else if (a == "--steps")
      o.steps = std::stoi(next());
    else if (a == "--adam")
      o.adam = true;
    else if (a == "--update-after-all")
      o.update_after_all = true;
    else if (a == "--forward-reductions")
      o.forward_reductions = true;
    else if (a == "--unused")
      o.unused = true;
  }
  return o;
}

class Framework {
 public:
  Framework(const Options& o, psdp_comm_h comm, int rank, int nranks, psdp::mp::Report& report)
      : o_(o), comm_(comm), rank_(rank), nranks_(nranks), report_(report), random_(1234 + rank) {}

  bool registerState() {
    psdp_plan_config_t config = PSDP_PLAN_CONFIG_INITIALIZER;
    config.group_size = o_.group == 0 ? nranks_ : o_.group;
    config.level = o_.world_level ? PSDP_SHARD_LEVEL_WORLD : PSDP_SHARD_LEVEL_GROUP;
    config.chunk_bytes = o_.chunk_bytes;
    psdp_status_t s =
        psdp_state_register(comm_, model_.descs.data(), static_cast<int>(model_.descs.size()), &config, &state_);
    report_.check(s == PSDP_SUCCESS, "psdp_state_register: " + why(comm_, s));
    if (s != PSDP_SUCCESS) return false;
    psdp_state_get_plan(state_, &plan_);
    psdp_plan_chunk_count(plan_, &chunks_);
    size_t owned = 0;
    for (size_t c = 0; c < chunks_; ++c) {
      state_offset_.push_back(owned);
      size_t n = 0;
      psdp_plan_owned_count(plan_, rank_, c, &n);
      owned += n;
    }
    model_.adam_m.assign(owned, 0.0f);
    model_.adam_v.assign(owned, 0.0f);
    return true;
  }

  void runStep(int step) {
    const std::string at = "step " + std::to_string(step) + ": ";
    psdp_step_config_t config = PSDP_STEP_CONFIG_INITIALIZER;
    config.reduce_window = config.gather_window = o_.window;
    if (o_.forward_reductions) config.reduce_order = PSDP_STEP_ORDER_FORWARD;
    config.unused_grads = o_.unused ? PSDP_UNUSED_GRADS_ZERO : PSDP_UNUSED_GRADS_ERROR;
    config.mode = o_.bulk ? PSDP_STEP_BULK : PSDP_STEP_PIPELINED;
    config.chunks_per_transfer = o_.chunks_per_transfer;
    psdp_step_h handle = nullptr;
    psdp_status_t s = psdp_step_begin(state_, &config, &handle);
    report_.check(s == PSDP_SUCCESS, at + "begin: " + why(nullptr, s));
    if (s != PSDP_SUCCESS) return;
    step_ = handle;
    held_.clear();
    updated_ = 0;
    // Backward: gradients written, then reported in random pieces and order, a poll now and then.
    for (size_t b = 0; b < kCounts.size(); ++b) {
      for (size_t i = 0; i < kCounts[b]; ++i) model_.grads[b][i] = gradientOf(rank_, b, i, step);
    }
    struct Piece {
      int buffer;
      size_t offset, count;
    };
    std::vector<Piece> pieces;
    for (size_t b = 0; b < kCounts.size(); ++b) {
      if (unusedAt(o_, rank_, b, step)) continue;
      for (size_t at_elem = 0; at_elem < kCounts[b];) {
        size_t n = std::min(kCounts[b] - at_elem, std::uniform_int_distribution<size_t>(1, 900)(random_));
        // Report through the gradient or the parameter index, either names the range.
        int buffer = static_cast<int>(b + (random_() % 2 == 0 ? kCounts.size() : 0));
        pieces.push_back({buffer, at_elem, n});
        at_elem += n;
      }
    }
    if (o_.over_time) {
      // As backward produces them: the last buffer's last elements first.
      std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) {
        const size_t ba = static_cast<size_t>(a.buffer) % kCounts.size(),
                     bb = static_cast<size_t>(b.buffer) % kCounts.size();
        return ba != bb ? ba > bb : a.offset > b.offset;
      });
    } else {
      std::shuffle(pieces.begin(), pieces.end(), random_);
    }
    // Now and then the rest in one call.
    const bool all_at_end = !o_.unused && !o_.over_time && random_() % 3 == 0;
    const size_t reported = all_at_end ? pieces.size() / 2 : pieces.size();
    for (size_t p = 0; p < reported; ++p) {
      // The compute of the next gradients (not synchronisation: nothing waits for it).
      if (o_.over_time) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      s = psdp_step_grads_ready(step_, pieces[p].buffer, pieces[p].offset, pieces[p].count);
      report_.check(s == PSDP_SUCCESS, at + "grads_ready: " + why(nullptr, s));
      if (o_.over_time || p % 4 == 0) poll(0.0, at);
    }
    if (o_.over_time) {
      report_.check(updated_ + held_.size() > 0,
                    at + "no chunk was handed out before the last gradients were reported (" +
                        std::to_string(pieces.size()) + " reports, 1 ms apart)");
    }
    if (all_at_end) {
      s = psdp_step_grads_ready(step_, PSDP_STEP_ALL_BUFFERS, 0, 0);
      report_.check(s == PSDP_SUCCESS, at + "grads_ready(all): " + why(nullptr, s));
    }
    s = psdp_step_backward_done(step_);
    report_.check(s == PSDP_SUCCESS, at + "backward_done: " + why(nullptr, s));
    // A collective of the user's between step calls, on the world communicator.
    int one = 1, total = 0;
    s = psdp_all_reduce(&one, &total, 1, PSDP_INT32, PSDP_SUM, comm_, nullptr, nullptr);
    report_.check(s == PSDP_SUCCESS && total == nranks_, at + "world all-reduce mid-step: " + why(comm_, s));
    while (updated_ + held_.size() < chunks_) {
      if (!poll(10.0, at)) break;
    }
    for (size_t c : held_) updateChunk(c, at);
    held_.clear();
    reference_.step(o_, nranks_, step);
    // The first buffer before the end, as a forward pass would wait for its first layers.
    s = psdp_step_wait_params(step_, 0, 0, kCounts[0], 30.0);
    report_.check(s == PSDP_SUCCESS, at + "wait_params: " + why(nullptr, s));
    if (s == PSDP_SUCCESS) checkParameters(0, at + "after wait_params: ");
    s = psdp_step_end(step_);
    report_.check(s == PSDP_SUCCESS, at + "end: " + why(nullptr, s));
    for (size_t b = 0; b < kCounts.size(); ++b) checkParameters(b, at);
  }

  void finish() {
    psdp_plan_free(plan_);
    report_.check(psdp_state_deregister(state_) == PSDP_SUCCESS, "deregister");
  }

 private:
  // Takes what is reduced (waiting up to timeout_s): updates it at once, or holds it with
  // --update-after-all until every chunk is in. False when nothing came in time.
  bool poll(double timeout_s, const std::string& at) {
    bool got = false;
    while (true) {
      psdp_step_chunk_t chunk = PSDP_STEP_CHUNK_INITIALIZER;
      psdp_status_t s = psdp_step_next_chunk(step_, timeout_s, &chunk);
      report_.check(s == PSDP_SUCCESS, at + "next_chunk: " + why(nullptr, s));
      if (s != PSDP_SUCCESS || chunk.chunk == PSDP_STEP_NO_CHUNK) return got;
      got = true;
      timeout_s = 0;
      checkOwnedGradients(chunk, at);
      if (o_.update_after_all) {
        held_.push_back(chunk.chunk);
        if (held_.size() + updated_ == chunks_) {
          for (size_t c : held_) updateChunk(c, at);
          held_.clear();
        }
      } else {
        updateChunk(chunk.chunk, at);
      }
    }
  }

  void checkOwnedGradients(const psdp_step_chunk_t& chunk, const std::string& at) {
    size_t bad = 0;
    for (size_t r = 0; r < chunk.nranges; ++r) {
      const psdp_owned_range_t& range = chunk.ranges[r];
      for (size_t i = range.offset; i < range.offset + range.count; ++i) {
        const float want = Reference::summed(o_, nranks_, static_cast<size_t>(range.buffer), i, stepIndex());
        if (model_.grads[static_cast<size_t>(range.buffer)][i] != want) ++bad;
      }
    }
    report_.check(bad == 0, at + "chunk " + std::to_string(chunk.chunk) + ": " + std::to_string(bad) +
                                " owned gradients differ from the reduced sum");
  }

  void updateChunk(size_t c, const std::string& at) {
    size_t n = 0;
    psdp_plan_owned_ranges(plan_, rank_, c, nullptr, 0, &n);
    std::vector<psdp_owned_range_t> ranges(n);
    psdp_plan_owned_ranges(plan_, rank_, c, ranges.data(), n, &n);
    size_t state_at = state_offset_[c];
    for (const psdp_owned_range_t& range : ranges) {
      auto& p = model_.params[static_cast<size_t>(range.buffer)];
      auto& g = model_.grads[static_cast<size_t>(range.buffer)];
      for (size_t i = range.offset; i < range.offset + range.count; ++i, ++state_at) {
        update(o_.adam, p[i], model_.adam_m[state_at], model_.adam_v[state_at], g[i]);
      }
    }
    psdp_status_t s = psdp_step_chunk_updated(step_, c);
    report_.check(s == PSDP_SUCCESS, at + "chunk_updated: " + why(nullptr, s));
    ++updated_;
  }

  void checkParameters(size_t b, const std::string& at) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < kCounts[b]; ++i) {
      if (std::memcmp(&model_.params[b][i], &reference_.params[b][i], sizeof(float)) != 0 && bad++ == 0) first = i;
    }
    report_.check(bad == 0, at + "buffer " + std::to_string(b) + ": " + std::to_string(bad) +
                                " parameters differ from the reference, first at " + std::to_string(first));
  }

  int stepIndex() const { return current_step_; }

 public:
  int current_step_ = 0;

 private:
  const Options o_;
  psdp_comm_h comm_;
  int rank_, nranks_;
  psdp::mp::Report& report_;
  std::mt19937_64 random_;
  Model model_;
  Reference reference_;
  psdp_state_h state_ = nullptr;
  psdp_plan_h plan_ = nullptr;
  psdp_step_h step_ = nullptr;
  size_t chunks_ = 0;
  std::vector<size_t> state_offset_;
  std::vector<size_t> held_;
  size_t updated_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  psdp::mp::Report report;
  int rank = 0, nranks = 0;
  psdp_comm_h comm = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (comm == nullptr) return 1;
  const Options o = parse(argc, argv);
  Framework framework(o, comm, rank, nranks, report);
  if (framework.registerState()) {
    for (int step = 0; step < o.steps; ++step) {
      framework.current_step_ = step;
      framework.runStep(step);
    }
    framework.finish();
  }
  report.check(psdp_comm_finalize(comm) == PSDP_SUCCESS, "finalize");
  psdp_comm_destroy(comm);
  return report.finish();
}
