// Sharded training steps across real processes, the test playing the framework: every rank writes integer
// gradients (exact float sums), reports them ready in its own random order and granularity (sometimes
// "all at once"), takes the reduced chunks psdp hands out, updates its owned ranges with SGD or Adam, and
// marks them updated; the parameters must then equal a single-process reference bit for bit on every rank,
// after every step. Also: the owned gradients equal the reduced sum when handed out; parameter waits before
// the end; a collective of the user's on the world communicator in the middle of a step; unused gradients
// (one rank never reports a buffer in one step, with unused gradients treated as zero); gradient accumulation
// (--accumulate K: K micro-batches per step, the first K-1 summed into the buffers with no psdp call, the
// step begun with the last); the step's timeline (psdp_state_step_events) after every step; the gradient norm
// (--grad-norm: this step's before any update, or the previous step's) equal to the reference's, bit for bit,
// and used for clipping; with --nonfinite an inf and a NaN on one rank in one step, which every rank must
// see (and skip that update).
// With --over-time, backward is simulated: gradients are reported from the last element to the first, 1 ms
// of "compute" apart, and the first chunks must be reduced and handed out before the last gradients are.
//   mp_step [--group G] [--level group|world] [--window N] [--chunk-bytes B] [--steps S] [--adam]
//           [--update-after-all] [--forward-reductions] [--unused] [--over-time] [--bulk] [--group-chunks N]
//           [--accumulate K] [--grad-norm global|deferred] [--nonfinite] [--online] [--poll-only]
//           [--scale K] [--expect-fragments]
// With --poll-only the framework never waits: every psdp_step_next_chunk has timeout 0 (run it under
// PSDP_PROGRESS=caller, where those calls alone must move the step along), and every chunk must still be
// handed out within 60 s.
// With --online, steps ask for online tuning of the windows, the grouping and the fragment: the parameters
// must stay exact while the engine tries settings, every rank must see the same phase and settings after
// every step, and with enough steps the choice must be made (frozen); with --expect-fragments some step
// before then must have run a fragment the tuner tried. --scale K makes every buffer K times as long.
#include <psdp/psdp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
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
  int accumulate = 1;              // micro-batches per step
  int grad_norm = PSDP_GRAD_NORM_NONE;
  bool nonfinite = false;         // an inf and a NaN in one rank's gradients of one step
  bool online = false;            // online tuning of the windows and grouping (which --window and --group-chunks fix)
  bool expect_fragments = false;  // with --online: some step must run a fragment the tuner tries
  bool poll_only = false;         // next_chunk only ever with timeout 0
};

// Counts that neither the chunk nor the alignment divides; --scale K multiplies them (an odd K keeps that).
std::vector<size_t> buffer_counts = {1000, 3001, 777, 4101};
constexpr float kLearningRate = 0.125f;
// The buffer rank 0 never reports in step 1 with --unused.
constexpr size_t kUnusedBuffer = 2;
constexpr int kUnusedStep = 1;

float initialParameter(size_t b, size_t i) {
  return static_cast<float>((b * 17 + i) % 13);
}

// The gradient of one micro-batch.
float gradientOf(int rank, size_t b, size_t i, int micro_batch) {
  return static_cast<float>(
      static_cast<int>((b * 131 + i * 7 + static_cast<size_t>(rank) * 3 + static_cast<size_t>(micro_batch) * 5) % 11) -
      5);
}

// With --nonfinite: the last rank's gradients of step kNonfiniteStep hold an inf and a NaN in buffer 1.
constexpr int kNonfiniteStep = 1;
constexpr float kMaxNorm = 40.0f;

float injected(const Options& o, int rank, int nranks, size_t b, size_t i, int step, float g) {
  if (!o.nonfinite || rank != nranks - 1 || b != 1 || step != kNonfiniteStep) return g;
  if (i == 5) return std::numeric_limits<float>::infinity();
  if (i == 700) return std::numeric_limits<float>::quiet_NaN();
  return g;
}

// Clipping's factor for a squared norm, the same float arithmetic in the framework and the reference.
float clipFactor(double sq_norm) {
  return static_cast<float>(std::min(1.0, static_cast<double>(kMaxNorm) / std::sqrt(sq_norm)));
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
    for (size_t b = 0; b < buffer_counts.size(); ++b) {
      params.emplace_back(buffer_counts[b]);
      grads.emplace_back(buffer_counts[b]);
      for (size_t i = 0; i < buffer_counts[b]; ++i) params[b][i] = initialParameter(b, i);
    }
    names.resize(2 * buffer_counts.size());
    for (size_t b = 0; b < buffer_counts.size(); ++b) {
      names[b] = "w" + std::to_string(b);
      descs.push_back({names[b].c_str(), params[b].data(), buffer_counts[b], PSDP_FLOAT32, PSDP_BUFFER_PARAMETER,
                       PSDP_MEMORY_HOST, 0});
    }
    for (size_t b = 0; b < buffer_counts.size(); ++b) {
      names[buffer_counts.size() + b] = "w" + std::to_string(b) + ".grad";
      descs.push_back({names[buffer_counts.size() + b].c_str(), grads[b].data(), buffer_counts[b], PSDP_FLOAT32,
                       PSDP_BUFFER_GRADIENT, PSDP_MEMORY_HOST, 0});
    }
  }
  std::vector<std::string> names;
};

// The single-process reference: every element's summed gradient and update, step by step.
struct Reference {
  std::vector<std::vector<float>> params, m, v;
  explicit Reference() {
    for (size_t b = 0; b < buffer_counts.size(); ++b) {
      params.emplace_back(buffer_counts[b]);
      m.emplace_back(buffer_counts[b], 0.0f);
      v.emplace_back(buffer_counts[b], 0.0f);
      for (size_t i = 0; i < buffer_counts[b]; ++i) params[b][i] = initialParameter(b, i);
    }
  }
  static float summed(const Options& o, int nranks, size_t b, size_t i, int step) {
    float sum = 0;
    for (int r = 0; r < nranks; ++r) {
      if (unusedAt(o, r, b, step)) continue;
      float g = 0;
      for (int mb = 0; mb < o.accumulate; ++mb) g += gradientOf(r, b, i, step * o.accumulate + mb);
      sum += injected(o, r, nranks, b, i, step, g);
    }
    return sum;
  }
  // The squared norm of the summed gradient: exact (integers), inf or NaN with an injected one.
  static double sqNorm(const Options& o, int nranks, int step) {
    double sq = 0;
    for (size_t b = 0; b < buffer_counts.size(); ++b) {
      for (size_t i = 0; i < buffer_counts[b]; ++i) {
        const double g = summed(o, nranks, b, i, step);
        sq += g * g;
      }
    }
    return sq;
  }
  // factor: the clipping factor the framework applies; skip: loss scaling skips the update.
  void step(const Options& o, int nranks, int step, float factor, bool skip) {
    if (skip) return;
    for (size_t b = 0; b < buffer_counts.size(); ++b) {
      for (size_t i = 0; i < buffer_counts[b]; ++i)
        update(o.adam, params[b][i], m[b][i], v[b][i], summed(o, nranks, b, i, step) * factor);
    }
  }
};

Options parse(int argc, char** argv) {
  Options o;
  bool window_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
    if (a == "--group")
      o.group = std::stoi(next());
    else if (a == "--level")
      o.world_level = next() == "world";
    else if (a == "--window") {
      o.window = std::stoul(next());
      window_given = true;
    } else if (a == "--chunk-bytes")
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
    else if (a == "--accumulate")
      o.accumulate = std::stoi(next());
    else if (a == "--grad-norm")
      o.grad_norm = next() == "global" ? PSDP_GRAD_NORM_GLOBAL : PSDP_GRAD_NORM_DEFERRED;
    else if (a == "--nonfinite")
      o.nonfinite = true;
    else if (a == "--over-time")
      o.over_time = true;
    else if (a == "--bulk")
      o.bulk = true;
    else if (a == "--group-chunks")
      o.chunks_per_transfer = std::stoul(next());
    else if (a == "--poll-only")
      o.poll_only = true;
    else if (a == "--online")
      o.online = true;
    else if (a == "--scale") {
      const size_t scale = std::stoul(next());
      for (size_t& count : buffer_counts) count *= scale;
    } else if (a == "--expect-fragments")
      o.expect_fragments = true;
    else {
      // An option read as nothing would let the test pass on the defaults.
      std::fprintf(stderr, "mp_step: unknown option '%s'\n", a.c_str());
      std::exit(2);
    }
  }
  if (o.online && !window_given) o.window = 0;  // left to the tuner
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
    // Gradient accumulation: every micro-batch but the last adds its gradients into the buffers with no
    // psdp call at all (no reduction); the step begins with the last one, which reports them.
    for (size_t b = 0; b < buffer_counts.size(); ++b) std::fill(model_.grads[b].begin(), model_.grads[b].end(), 0.0f);
    for (int mb = 0; mb + 1 < o_.accumulate; ++mb) {
      for (size_t b = 0; b < buffer_counts.size(); ++b) {
        for (size_t i = 0; i < buffer_counts[b]; ++i)
          model_.grads[b][i] += gradientOf(rank_, b, i, step * o_.accumulate + mb);
      }
    }
    psdp_step_config_t config = PSDP_STEP_CONFIG_INITIALIZER;
    config.reduce_window = config.gather_window = o_.window;
    if (o_.forward_reductions) config.reduce_order = PSDP_STEP_ORDER_FORWARD;
    config.unused_grads = o_.unused ? PSDP_UNUSED_GRADS_ZERO : PSDP_UNUSED_GRADS_ERROR;
    config.mode = o_.bulk ? PSDP_STEP_BULK : PSDP_STEP_PIPELINED;
    config.chunks_per_transfer = o_.chunks_per_transfer;
    config.grad_norm = o_.grad_norm;
    config.online_tuning = o_.online ? 1 : 0;
    psdp_step_h handle = nullptr;
    psdp_status_t s = psdp_step_begin(state_, &config, &handle);
    report_.check(s == PSDP_SUCCESS, at + "begin: " + why(nullptr, s));
    if (s != PSDP_SUCCESS) return;
    step_ = handle;
    held_.clear();
    updated_ = 0;
    factor_ = 1.0f;
    skip_ = false;
    norm_known_ = false;
    if (o_.grad_norm == PSDP_GRAD_NORM_DEFERRED) fetchNorm(step, at);
    // Backward (of the last micro-batch): gradients added, then reported in random pieces and order, a poll
    // now and then.
    const int last = step * o_.accumulate + o_.accumulate - 1;
    for (size_t b = 0; b < buffer_counts.size(); ++b) {
      for (size_t i = 0; i < buffer_counts[b]; ++i) {
        model_.grads[b][i] =
            injected(o_, rank_, nranks_, b, i, step, model_.grads[b][i] + gradientOf(rank_, b, i, last));
      }
    }
    struct Piece {
      int buffer;
      size_t offset, count;
    };
    std::vector<Piece> pieces;
    for (size_t b = 0; b < buffer_counts.size(); ++b) {
      if (unusedAt(o_, rank_, b, step)) continue;
      for (size_t at_elem = 0; at_elem < buffer_counts[b];) {
        size_t n = std::min(buffer_counts[b] - at_elem, std::uniform_int_distribution<size_t>(1, 900)(random_));
        // Report through the gradient or the parameter index, either names the range.
        int buffer = static_cast<int>(b + (random_() % 2 == 0 ? buffer_counts.size() : 0));
        pieces.push_back({buffer, at_elem, n});
        at_elem += n;
      }
    }
    if (o_.over_time) {
      // As backward produces them: the last buffer's last elements first.
      std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) {
        const size_t ba = static_cast<size_t>(a.buffer) % buffer_counts.size(),
                     bb = static_cast<size_t>(b.buffer) % buffer_counts.size();
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
    // A collective of the user's between step calls, on the world communicator (not with --poll-only: its
    // wait would drive the step's collectives too).
    if (!o_.poll_only) {
      int one = 1, total = 0;
      s = psdp_all_reduce(&one, &total, 1, PSDP_INT32, PSDP_SUM, comm_, nullptr, nullptr);
      report_.check(s == PSDP_SUCCESS && total == nranks_, at + "world all-reduce mid-step: " + why(comm_, s));
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (updated_ + held_.size() < chunks_) {
      if (!o_.poll_only) {
        if (!poll(10.0, at)) break;
      } else if (!poll(0.0, at) && std::chrono::steady_clock::now() > give_up) {
        report_.check(false, at + "polling with timeout 0 got " + std::to_string(updated_ + held_.size()) + " of " +
                                 std::to_string(chunks_) + " chunks in 60 s");
        break;
      }
    }
    for (size_t c : held_) updateChunk(c, at);
    held_.clear();
    if (o_.grad_norm == PSDP_GRAD_NORM_GLOBAL && !norm_known_) fetchNorm(step, at);
    reference_.step(o_, nranks_, step, factor_, skip_);
    // The first buffer before the end, as a forward pass would wait for its first layers.
    s = psdp_step_wait_params(step_, 0, 0, buffer_counts[0], 30.0);
    report_.check(s == PSDP_SUCCESS, at + "wait_params: " + why(nullptr, s));
    if (s == PSDP_SUCCESS) checkParameters(0, at + "after wait_params: ");
    s = psdp_step_end(step_);
    report_.check(s == PSDP_SUCCESS, at + "end: " + why(nullptr, s));
    for (size_t b = 0; b < buffer_counts.size(); ++b) checkParameters(b, at);
    checkTimeline(at);
    if (o_.online) checkOnlineTuning(step, at);
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

  // The ended step's timeline: every stage of every chunk once, each after the one before it.
  void checkTimeline(const std::string& at) {
    const int group = o_.group == 0 ? nranks_ : o_.group;
    const bool replicas = group < nranks_;
    std::vector<int> stages = {PSDP_STAGE_REDUCE_IN_GROUP, PSDP_STAGE_UPDATE, PSDP_STAGE_GATHER_IN_GROUP};
    if (replicas) stages.push_back(PSDP_STAGE_REDUCE_ACROSS_REPLICAS);
    if (replicas && o_.world_level) stages.push_back(PSDP_STAGE_GATHER_ACROSS_REPLICAS);
    size_t count = 0;
    psdp_status_t s = psdp_state_step_events(state_, nullptr, 0, &count);
    report_.check(s == PSDP_SUCCESS && count == chunks_ * stages.size(),
                  at + "step events: " + std::to_string(count) + " for " + std::to_string(chunks_) + " chunks of " +
                      std::to_string(stages.size()) + " stages: " + why(nullptr, s));
    std::vector<psdp_step_event_t> events(count);
    psdp_state_step_events(state_, events.data(), count, &count);
    // Per chunk, by stage: begin and end (0: not seen).
    std::vector<std::vector<std::pair<uint64_t, uint64_t>>> seen(chunks_,
                                                                 std::vector<std::pair<uint64_t, uint64_t>>(5));
    for (const psdp_step_event_t& e : events) {
      const bool valid = e.chunk < chunks_ && e.stage >= 0 && e.stage < 5 && e.begin_ns <= e.end_ns && e.begin_ns > 0;
      report_.check(valid, at + "a malformed step event, chunk " + std::to_string(e.chunk));
      if (!valid) continue;
      auto& slot = seen[e.chunk][static_cast<size_t>(e.stage)];
      report_.check(slot.first == 0,
                    at + "chunk " + std::to_string(e.chunk) + ": stage " + std::to_string(e.stage) + " twice");
      slot = {e.begin_ns, e.end_ns};
    }
    for (size_t c = 0; c < chunks_; ++c) {
      const auto& t = seen[c];
      for (int stage : stages) {
        report_.check(t[static_cast<size_t>(stage)].first != 0,
                      at + "chunk " + std::to_string(c) + ": no stage " + std::to_string(stage));
      }
      const uint64_t reduced =
          std::max(t[PSDP_STAGE_REDUCE_IN_GROUP].second, t[PSDP_STAGE_REDUCE_ACROSS_REPLICAS].second);
      report_.check(
          t[PSDP_STAGE_UPDATE].first >= reduced && t[PSDP_STAGE_GATHER_IN_GROUP].first >= t[PSDP_STAGE_UPDATE].second,
          at + "chunk " + std::to_string(c) + ": stages out of order");
    }
  }

  void checkOwnedGradients(const psdp_step_chunk_t& chunk, const std::string& at) {
    size_t bad = 0;
    for (size_t r = 0; r < chunk.nranges; ++r) {
      const psdp_owned_range_t& range = chunk.ranges[r];
      for (size_t i = range.offset; i < range.offset + range.count; ++i) {
        const float want = Reference::summed(o_, nranks_, static_cast<size_t>(range.buffer), i, stepIndex());
        const float got = model_.grads[static_cast<size_t>(range.buffer)][i];
        if (got != want && !(std::isnan(got) && std::isnan(want))) ++bad;
      }
    }
    report_.check(bad == 0, at + "chunk " + std::to_string(chunk.chunk) + ": " + std::to_string(bad) +
                                " owned gradients differ from the reduced sum");
  }

  // The step's norm from psdp against the reference's: this step's (global; an injected inf or NaN makes
  // the framework skip the update, as loss scaling does) or the previous one's (deferred). Sets the clipping
  // factor the update applies.
  void fetchNorm(int step, const std::string& at) {
    norm_known_ = true;
    psdp_grad_norm_t norm;
    psdp_status_t s = psdp_step_grad_norm(step_, 30.0, &norm);
    report_.check(s == PSDP_SUCCESS, at + "grad_norm: " + why(nullptr, s));
    if (s != PSDP_SUCCESS) return;
    const int of = o_.grad_norm == PSDP_GRAD_NORM_GLOBAL ? step : step - 1;
    if (of < 0) {
      report_.check(norm.available == 0, at + "a deferred norm before any step computed one");
      return;
    }
    const double want = Reference::sqNorm(o_, nranks_, of);
    const bool want_nonfinite = !std::isfinite(want);
    report_.check(
        norm.available == 1 && norm.step == static_cast<uint64_t>(of) && norm.nonfinite == (want_nonfinite ? 1 : 0),
        at + "grad_norm of step " + std::to_string(norm.step) + ": available " + std::to_string(norm.available) +
            ", nonfinite " + std::to_string(norm.nonfinite) + ", want step " + std::to_string(of) +
            (want_nonfinite ? " non-finite" : " finite"));
    if (want_nonfinite) {
      report_.check(!std::isfinite(norm.sq_norm), at + "a non-finite gradient with a finite squared norm");
      skip_ = o_.grad_norm == PSDP_GRAD_NORM_GLOBAL;
      return;
    }
    report_.check(norm.sq_norm == want,
                  at + "squared norm " + std::to_string(norm.sq_norm) + ", want " + std::to_string(want));
    factor_ = clipFactor(norm.sq_norm);
  }

  void updateChunk(size_t c, const std::string& at) {
    if (o_.grad_norm == PSDP_GRAD_NORM_GLOBAL && !norm_known_) fetchNorm(current_step_, at);
    size_t n = 0;
    psdp_plan_owned_ranges(plan_, rank_, c, nullptr, 0, &n);
    std::vector<psdp_owned_range_t> ranges(n);
    psdp_plan_owned_ranges(plan_, rank_, c, ranges.data(), n, &n);
    size_t state_at = state_offset_[c];
    for (const psdp_owned_range_t& range : ranges) {
      auto& p = model_.params[static_cast<size_t>(range.buffer)];
      auto& g = model_.grads[static_cast<size_t>(range.buffer)];
      for (size_t i = range.offset; i < range.offset + range.count; ++i, ++state_at) {
        if (!skip_) update(o_.adam, p[i], model_.adam_m[state_at], model_.adam_v[state_at], g[i] * factor_);
      }
    }
    psdp_status_t s = psdp_step_chunk_updated(step_, c);
    report_.check(s == PSDP_SUCCESS, at + "chunk_updated: " + why(nullptr, s));
    ++updated_;
  }

  void checkParameters(size_t b, const std::string& at) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < buffer_counts[b]; ++i) {
      if (std::memcmp(&model_.params[b][i], &reference_.params[b][i], sizeof(float)) != 0 && bad++ == 0) first = i;
    }
    report_.check(bad == 0, at + "buffer " + std::to_string(b) + ": " + std::to_string(bad) +
                                " parameters differ from the reference, first at " + std::to_string(first));
  }

  // Every rank must report the same phase and settings after every step (they decide alike from the same
  // agreed times); the settings must be among the tuner's; once the choice is made it stays; and within 36
  // steps (the start, then at most 17 settings of 2 steps each, then the choice) it is made.
  void checkOnlineTuning(int step, const std::string& at) {
    psdp_engine_tuning_t tuning{};
    psdp_status_t s = psdp_state_engine_tuning(state_, &tuning);
    report_.check(s == PSDP_SUCCESS, at + "engine_tuning: " + why(nullptr, s));
    constexpr size_t kSettings = 4;
    const uint64_t mine[kSettings] = {static_cast<uint64_t>(tuning.phase), tuning.window, tuning.chunks_per_transfer,
                                      tuning.fragment_bytes};
    auto text = [](const uint64_t* v) {
      return "phase " + std::to_string(v[0]) + ", window " + std::to_string(v[1]) + " x" + std::to_string(v[2]) +
             ", fragment " + std::to_string(v[3]);
    };
    std::vector<uint64_t> all(kSettings * static_cast<size_t>(nranks_));
    s = psdp_all_gather(mine, all.data(), kSettings, PSDP_UINT64, comm_, nullptr, nullptr);
    report_.check(s == PSDP_SUCCESS, at + "all_gather: " + why(comm_, s));
    for (int r = 0; r < nranks_ && s == PSDP_SUCCESS; ++r) {
      const uint64_t* theirs = &all[kSettings * static_cast<size_t>(r)];
      report_.check(
          std::equal(mine, mine + kSettings, theirs),
          at + "online tuning: rank " + std::to_string(r) + " has " + text(theirs) + "; this rank " + text(mine));
    }
    const bool known_window = tuning.window == 1 || tuning.window == 2 || tuning.window == 4 || tuning.window == 8;
    const bool known_grouping = tuning.chunks_per_transfer >= 1 && tuning.chunks_per_transfer <= 16 &&
                                (tuning.chunks_per_transfer & (tuning.chunks_per_transfer - 1)) == 0;
    const size_t f = tuning.fragment_bytes;
    const bool known_fragment = f == 0 || (f >= (size_t{128} << 10) && f <= (size_t{4} << 20) && (f & (f - 1)) == 0);
    report_.check(known_window && known_grouping && known_fragment && tuning.phase != PSDP_ENGINE_TUNING_OFF,
                  at + "online tuning: " + text(mine));
    tried_fragment_ |= f != 0;
    const char* deterministic = std::getenv("PSDP_DETERMINISTIC");
    if (deterministic != nullptr && std::string(deterministic) == "1") {
      report_.check(tuning.chunks_per_transfer == 1, at +
                                                         "online tuning changed the grouping in deterministic mode: x" +
                                                         std::to_string(tuning.chunks_per_transfer));
    }
    if (frozen_) {
      report_.check(tuning.phase == PSDP_ENGINE_TUNING_FROZEN && tuning.window == frozen_at_.window &&
                        tuning.chunks_per_transfer == frozen_at_.chunks_per_transfer &&
                        tuning.fragment_bytes == frozen_at_.fragment_bytes,
                    at + "online tuning changed after its choice");
    }
    if (tuning.phase == PSDP_ENGINE_TUNING_FROZEN && !frozen_) {
      frozen_ = true;
      frozen_at_ = tuning;
      report_.check(tuning.step_s > 0 && tuning.start_step_s > 0 && tuning.step_s <= tuning.start_step_s,
                    at + "online tuning: the choice's time " + std::to_string(tuning.step_s) +
                        " s beyond the start's " + std::to_string(tuning.start_step_s));
    }
    report_.check(frozen_ || step < 35, at + "online tuning has not made its choice after 36 steps");
    // Private buffers make the reductions fall back to the ring, whose fragments the tuner then tries, all
    // before it freezes.
    if (o_.expect_fragments && frozen_) {
      report_.check(tried_fragment_, at + "online tuning froze without trying a fragment");
    }
  }

  int stepIndex() const { return current_step_; }

 public:
  int current_step_ = 0;
  float factor_ = 1.0f;  // this step's clipping factor
  bool skip_ = false;    // this step's update is skipped (a non-finite gradient)
  bool norm_known_ = false;

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
  bool frozen_ = false;          // online tuning has made its choice, frozen_at_
  bool tried_fragment_ = false;  // some step ran a fragment other than the collectives' own
  psdp_engine_tuning_t frozen_at_{};
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
