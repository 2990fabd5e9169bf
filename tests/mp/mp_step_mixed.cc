// Mixed-precision steps across real processes, the test playing the framework: bfloat16 (or float16)
// parameters and gradients, float32 master weights and Adam state, and a float32 gradient shard that the step
// delivers the reduced gradient into. Every rank writes integer gradients (exact in the 16-bit dtype) and
// reports them in its own random order; each handed-out chunk's shard elements must equal the float32 sum of
// every rank's gradients bit for bit (float32 partial sums, the default), or lie within the bound psdp.h
// states (--partials gradient: 16-bit partial sums, which for bfloat16 must then differ from the exact sum
// somewhere, or the option changed nothing). The framework updates its master weights from the shard, writes
// them rounded into its owned parameters, and after the gather every parameter equals the single-process
// reference's rounded master weight bit for bit (float32 partials) or is alike on every rank (16-bit
// partials). --no-shard: float32 partials rounded back into the gradient buffers instead. --grad-norm: the
// global norm equals the reference's (the squares of the float32 sums).
//   mp_step_mixed [--dtype bf16|fp16] [--group G] [--level group|world] [--partials float32|gradient]
//                 [--no-shard] [--grad-norm] [--steps S] [--chunk-bytes B]
#include <psdp/psdp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

struct Options {
  psdp_dtype_t dtype = PSDP_BFLOAT16;
  int group = 0;  // 0: W
  bool world_level = false;
  int partials = PSDP_PARTIALS_DEFAULT;
  bool shard = true;
  bool grad_norm = false;
  int steps = 3;
  size_t chunk_bytes = 2048;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
    if (a == "--dtype")
      o.dtype = next() == "fp16" ? PSDP_FLOAT16 : PSDP_BFLOAT16;
    else if (a == "--group")
      o.group = std::stoi(next());
    else if (a == "--level")
      o.world_level = next() == "world";
    else if (a == "--partials")
      o.partials = next() == "gradient" ? PSDP_PARTIALS_GRADIENT_DTYPE : PSDP_PARTIALS_FLOAT32;
    else if (a == "--no-shard")
      o.shard = false;  // and float32 partials, the one choice whose rounded result is predictable
    else if (a == "--grad-norm")
      o.grad_norm = true;
    else if (a == "--steps")
      o.steps = std::stoi(next());
    else if (a == "--chunk-bytes")
      o.chunk_bytes = std::stoul(next());
  }
  if (!o.shard) o.partials = PSDP_PARTIALS_FLOAT32;
  return o;
}

// The reference's own 16-bit conversions (round to nearest, ties to even; the values here are finite and
// in range), written independently of the library's.
uint16_t toBf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
float fromBf16(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}
uint16_t toFp16(float f) {
  return std::bit_cast<uint16_t>(static_cast<_Float16>(f));
}
float fromFp16(uint16_t h) {
  return static_cast<float>(std::bit_cast<_Float16>(h));
}

// Counts that neither the chunk nor the alignment divides.
const std::vector<size_t> kCounts = {1000, 3001, 777, 2048};
constexpr float kLearningRate = 0.125f;

float initialParameter(size_t b, size_t i) {
  return static_cast<float>(static_cast<int>((b * 17 + i) % 61) - 30);
}

// Integers in [-255, 255]: exact in bfloat16 and float16, and their sums over four ranks exceed 256, where
// bfloat16 can no longer hold every integer.
float gradientOf(int rank, size_t b, size_t i, int step) {
  const uint64_t x =
      (b * 1315423911u + i * 2654435761u + static_cast<uint64_t>(rank) * 97 + static_cast<uint64_t>(step) * 7919) % 511;
  return static_cast<float>(static_cast<int>(x) - 255);
}

// The exact reduced gradient, in float32 (integers: every order of addition gives it), and the sum of the
// magnitudes the error bound scales with.
float summed(int nranks, size_t b, size_t i, int step) {
  float s = 0;
  for (int r = 0; r < nranks; ++r) s += gradientOf(r, b, i, step);
  return s;
}
float magnitudes(int nranks, size_t b, size_t i, int step) {
  float s = 0;
  for (int r = 0; r < nranks; ++r) s += std::fabs(gradientOf(r, b, i, step));
  return s;
}

// psdp.h's bound for 16-bit partial sums: g(W - 1) * sum |x_r|, g(n) = n*u / (1 - n*u).
double partialSumBound(psdp_dtype_t dtype, int nranks, double magnitude) {
  const double u = dtype == PSDP_BFLOAT16 ? 0x1p-8 : 0x1p-11;
  const double n = nranks - 1;
  return n * u / (1 - n * u) * magnitude;
}

void adam(float& p, float& m, float& v, float g) {
  m = 0.5f * m + 0.5f * g;
  v = 0.75f * v + 0.25f * g * g;
  p -= kLearningRate * m / (std::sqrt(v) + 1.0f);
}

class Framework {
 public:
  Framework(const Options& o, psdp_comm_h comm, int rank, int nranks, psdp::mp::Report& report)
      : o_(o), comm_(comm), rank_(rank), nranks_(nranks), report_(report), random_(99 + rank) {
    for (size_t b = 0; b < kCounts.size(); ++b) {
      params_.emplace_back(kCounts[b]);
      grads_.emplace_back(kCounts[b]);
      reference_.emplace_back(kCounts[b]);
      ref_m_.emplace_back(kCounts[b], 0.0f);
      ref_v_.emplace_back(kCounts[b], 0.0f);
      for (size_t i = 0; i < kCounts[b]; ++i) {
        params_[b][i] = round(initialParameter(b, i));
        reference_[b][i] = initialParameter(b, i);
      }
    }
  }

  uint16_t round(float f) const { return o_.dtype == PSDP_BFLOAT16 ? toBf16(f) : toFp16(f); }
  float widen(uint16_t h) const { return o_.dtype == PSDP_BFLOAT16 ? fromBf16(h) : fromFp16(h); }
  bool exact() const {
    return o_.partials == PSDP_PARTIALS_FLOAT32 || (o_.partials == PSDP_PARTIALS_DEFAULT && o_.shard);
  }

  bool registerState() {
    std::vector<std::string> names;
    for (size_t b = 0; b < kCounts.size(); ++b) names.push_back("w" + std::to_string(b));
    for (size_t b = 0; b < kCounts.size(); ++b) names.push_back("w" + std::to_string(b) + ".grad");
    std::vector<psdp_buffer_desc_t> descs;
    for (size_t b = 0; b < kCounts.size(); ++b) {
      descs.push_back(
          {names[b].c_str(), params_[b].data(), kCounts[b], o_.dtype, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0});
    }
    for (size_t b = 0; b < kCounts.size(); ++b) {
      descs.push_back({names[kCounts.size() + b].c_str(), grads_[b].data(), kCounts[b], o_.dtype, PSDP_BUFFER_GRADIENT,
                       PSDP_MEMORY_HOST, 0});
    }
    psdp_plan_config_t config = PSDP_PLAN_CONFIG_INITIALIZER;
    config.group_size = o_.group == 0 ? nranks_ : o_.group;
    config.level = o_.world_level ? PSDP_SHARD_LEVEL_WORLD : PSDP_SHARD_LEVEL_GROUP;
    config.chunk_bytes = o_.chunk_bytes;
    std::vector<int> layout(static_cast<size_t>(nranks_));
    psdp_status_t s = psdp_comm_get_layout(comm_, config.group_size, layout.data());
    report_.check(s == PSDP_SUCCESS, "get_layout: " + why(comm_, s));
    psdp_plan_h plan = nullptr;
    s = psdp_plan_create(descs.data(), static_cast<int>(descs.size()), nranks_, layout.data(), &config, &plan);
    report_.check(s == PSDP_SUCCESS, "plan_create: " + why(nullptr, s));
    if (s != PSDP_SUCCESS) return false;
    size_t owned = 0;
    psdp_plan_optimizer_state_count(plan, rank_, &owned);
    psdp_plan_free(plan);
    master_.assign(owned, 0.0f);
    m_.assign(owned, 0.0f);
    v_.assign(owned, 0.0f);
    shard_.assign(owned, 0.0f);
    descs.push_back({"master", master_.data(), owned, PSDP_FLOAT32, PSDP_BUFFER_OPTIMIZER_STATE, PSDP_MEMORY_HOST, 0});
    descs.push_back({"adam.m", m_.data(), owned, PSDP_FLOAT32, PSDP_BUFFER_OPTIMIZER_STATE, PSDP_MEMORY_HOST, 0});
    descs.push_back({"adam.v", v_.data(), owned, PSDP_FLOAT32, PSDP_BUFFER_OPTIMIZER_STATE, PSDP_MEMORY_HOST, 0});
    if (o_.shard) {
      descs.push_back(
          {"main_grad", shard_.data(), owned, PSDP_FLOAT32, PSDP_BUFFER_GRADIENT_SHARD, PSDP_MEMORY_HOST, 0});
    }
    s = psdp_state_register(comm_, descs.data(), static_cast<int>(descs.size()), &config, &state_);
    report_.check(s == PSDP_SUCCESS, "state_register: " + why(comm_, s));
    if (s != PSDP_SUCCESS) return false;
    psdp_state_get_plan(state_, &plan_);
    psdp_plan_chunk_count(plan_, &chunks_);
    // The master weights start as the parameters, in shard-file order.
    for (size_t c = 0; c < chunks_; ++c) {
      size_t at = 0;
      psdp_plan_shard_offset(plan_, rank_, c, &at);
      for (const psdp_owned_range_t& r : ownedRanges(c)) {
        for (size_t i = r.offset; i < r.offset + r.count; ++i) master_[at++] = initialParameter(r.buffer, i);
      }
    }
    return true;
  }

  void runStep(int step) {
    const std::string at = "step " + std::to_string(step) + ": ";
    step_index_ = step;
    for (size_t b = 0; b < kCounts.size(); ++b) {
      for (size_t i = 0; i < kCounts[b]; ++i) grads_[b][i] = round(gradientOf(rank_, b, i, step));
    }
    psdp_step_config_t config = PSDP_STEP_CONFIG_INITIALIZER;
    config.partial_sums = o_.partials;
    config.grad_norm = o_.grad_norm ? PSDP_GRAD_NORM_GLOBAL : PSDP_GRAD_NORM_NONE;
    psdp_status_t s = psdp_step_begin(state_, &config, &step_);
    report_.check(s == PSDP_SUCCESS, at + "begin: " + why(nullptr, s));
    if (s != PSDP_SUCCESS) return;
    // Backward: random pieces in random order.
    struct Piece {
      int buffer;
      size_t offset, count;
    };
    std::vector<Piece> pieces;
    for (size_t b = 0; b < kCounts.size(); ++b) {
      for (size_t e = 0; e < kCounts[b];) {
        const size_t n = std::min(kCounts[b] - e, std::uniform_int_distribution<size_t>(1, 700)(random_));
        pieces.push_back({static_cast<int>(kCounts.size() + b), e, n});
        e += n;
      }
    }
    std::shuffle(pieces.begin(), pieces.end(), random_);
    for (const Piece& p : pieces) {
      s = psdp_step_grads_ready(step_, p.buffer, p.offset, p.count);
      report_.check(s == PSDP_SUCCESS, at + "grads_ready: " + why(nullptr, s));
    }
    s = psdp_step_backward_done(step_);
    report_.check(s == PSDP_SUCCESS, at + "backward_done: " + why(nullptr, s));
    if (o_.grad_norm) checkNorm(at);
    for (size_t done = 0; done < chunks_; ++done) {
      psdp_step_chunk_t chunk = PSDP_STEP_CHUNK_INITIALIZER;
      s = psdp_step_next_chunk(step_, 30.0, &chunk);
      report_.check(s == PSDP_SUCCESS && chunk.chunk != PSDP_STEP_NO_CHUNK, at + "next_chunk: " + why(nullptr, s));
      if (s != PSDP_SUCCESS || chunk.chunk == PSDP_STEP_NO_CHUNK) break;
      updateChunk(chunk.chunk, at);
    }
    s = psdp_step_end(step_);
    report_.check(s == PSDP_SUCCESS, at + "end: " + why(nullptr, s));
    for (size_t b = 0; b < kCounts.size(); ++b) {
      for (size_t i = 0; i < kCounts[b]; ++i) {
        const float g = summed(nranks_, b, i, step);
        adam(reference_[b][i], ref_m_[b][i], ref_v_[b][i], o_.shard ? g : widen(round(g)));
      }
    }
    checkParameters(at);
  }

  void finish() {
    report_.check(differing_ > 0 || exact() || o_.dtype != PSDP_BFLOAT16,
                  "16-bit partial sums of bfloat16 never differed from the exact sum: the option changed nothing");
    psdp_plan_free(plan_);
    report_.check(psdp_state_deregister(state_) == PSDP_SUCCESS, "deregister");
  }

 private:
  std::vector<psdp_owned_range_t> ownedRanges(size_t chunk) const {
    size_t n = 0;
    psdp_plan_owned_ranges(plan_, rank_, chunk, nullptr, 0, &n);
    std::vector<psdp_owned_range_t> ranges(n);
    psdp_plan_owned_ranges(plan_, rank_, chunk, ranges.data(), n, &n);
    return ranges;
  }

  // The chunk's reduced gradient (from the shard, or the gradient buffers), checked against the exact sum,
  // then Adam on the master weights, rounded into the owned parameters.
  void updateChunk(size_t c, const std::string& at) {
    size_t state_at = 0;
    psdp_plan_shard_offset(plan_, rank_, c, &state_at);
    size_t bad = 0;
    std::string first;
    for (const psdp_owned_range_t& r : ownedRanges(c)) {
      const size_t b = static_cast<size_t>(r.buffer);
      for (size_t i = r.offset; i < r.offset + r.count; ++i, ++state_at) {
        const float want = summed(nranks_, b, i, step_index_);
        const float got = o_.shard ? shard_[state_at] : widen(grads_[b][i]);
        bool ok = false;
        if (!o_.shard) {
          ok = got == widen(round(want));  // the float32 sum, rounded once into the gradient buffer
        } else if (exact()) {
          ok = got == want;
        } else {
          const double error = std::fabs(double{got} - double{want});
          ok = error <= partialSumBound(o_.dtype, nranks_, magnitudes(nranks_, b, i, step_index_));
          differing_ += error > 0 ? 1 : 0;
        }
        if (!ok && bad++ == 0) {
          first = "buffer " + std::to_string(b) + " element " + std::to_string(i) + ": " + std::to_string(got) +
                  ", want " + std::to_string(want);
        }
        adam(master_[state_at], m_[state_at], v_[state_at], got);
        params_[b][i] = round(master_[state_at]);
      }
    }
    report_.check(bad == 0, at + "chunk " + std::to_string(c) + ": " + std::to_string(bad) +
                                " reduced gradients wrong, first " + first);
    psdp_status_t s = psdp_step_chunk_updated(step_, c);
    report_.check(s == PSDP_SUCCESS, at + "chunk_updated: " + why(nullptr, s));
  }

  // The norm is of the delivered gradients: with exact partial sums and a shard, of the float32 sums.
  void checkNorm(const std::string& at) {
    report_.check(exact() && o_.shard, at + "--grad-norm needs the gradient shard and float32 partial sums");
    psdp_grad_norm_t norm;
    psdp_status_t s = psdp_step_grad_norm(step_, 30.0, &norm);
    report_.check(s == PSDP_SUCCESS, at + "grad_norm: " + why(nullptr, s));
    double want = 0;
    for (size_t b = 0; b < kCounts.size(); ++b) {
      for (size_t i = 0; i < kCounts[b]; ++i) {
        const double g = summed(nranks_, b, i, step_index_);
        want += g * g;
      }
    }
    report_.check(s != PSDP_SUCCESS || norm.sq_norm == want,
                  at + "squared norm " + std::to_string(norm.sq_norm) + ", want " + std::to_string(want));
  }

  // Float32 partials: every parameter is the reference's rounded master weight. 16-bit partials: the
  // reduced gradient is not predictable to the bit, so every rank must hold the same parameters.
  void checkParameters(const std::string& at) {
    uint64_t digest = 1469598103934665603ull;
    size_t bad = 0;
    for (size_t b = 0; b < kCounts.size(); ++b) {
      for (size_t i = 0; i < kCounts[b]; ++i) {
        digest = (digest ^ params_[b][i]) * 1099511628211ull;
        if (exact() && params_[b][i] != round(reference_[b][i])) ++bad;
      }
    }
    report_.check(bad == 0,
                  at + std::to_string(bad) + " parameters differ from the reference's rounded master weights");
    uint64_t lowest = 0, highest = 0;
    psdp_status_t s = psdp_all_reduce(&digest, &lowest, 1, PSDP_UINT64, PSDP_MIN, comm_, nullptr, nullptr);
    s = s == PSDP_SUCCESS ? psdp_all_reduce(&digest, &highest, 1, PSDP_UINT64, PSDP_MAX, comm_, nullptr, nullptr) : s;
    report_.check(s == PSDP_SUCCESS && lowest == highest, at + "the ranks' parameters differ: " + why(comm_, s));
  }

  const Options o_;
  psdp_comm_h comm_;
  int rank_, nranks_;
  psdp::mp::Report& report_;
  std::mt19937_64 random_;
  std::vector<std::vector<uint16_t>> params_, grads_;
  std::vector<std::vector<float>> reference_, ref_m_, ref_v_;  // the single-process reference, per element
  std::vector<float> master_, m_, v_, shard_;                  // this rank's owned elements, shard-file order
  psdp_state_h state_ = nullptr;
  psdp_plan_h plan_ = nullptr;
  psdp_step_h step_ = nullptr;
  size_t chunks_ = 0;
  int step_index_ = 0;
  size_t differing_ = 0;  // 16-bit partials: delivered values that differ from the exact sum
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
    for (int step = 0; step < o.steps; ++step) framework.runStep(step);
    framework.finish();
  }
  report.check(psdp_comm_finalize(comm) == PSDP_SUCCESS, "finalize");
  psdp_comm_destroy(comm);
  return report.finish();
}
