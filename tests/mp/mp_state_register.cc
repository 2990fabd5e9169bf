// psdp_state_register across real processes: the ranks agree on one plan (the one psdp_plan_create gives
// for the same list), and every way of registering differently fails on every rank at once, with a message
// naming what differs and the ranks on each side, leaving the communicator usable:
//   another count, another name, a shorter list, another plan configuration (mismatch); one rank's invalid
//   arguments (invalid argument there, naming the field; invalid argument naming that rank elsewhere).
#include <psdp/psdp.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kMaxSeconds = 5.0;

// Parameters of three dtypes, their gradients in float32, and two optimizer-state buffers sized by the
// plan; every rank owns its buffers.
struct Model {
  std::vector<uint16_t> emb, norm;
  std::vector<float> proj, grad_emb, grad_norm, grad_proj, adam_m, adam_v;
  std::vector<psdp_buffer_desc_t> descs;

  Model() : emb(1000), norm(96), proj(5000), grad_emb(1000), grad_norm(96), grad_proj(5000) {
    descs = {
        {"emb", emb.data(), emb.size(), PSDP_BFLOAT16, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0},
        {"norm", norm.data(), norm.size(), PSDP_BFLOAT16, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0},
        {"proj", proj.data(), proj.size(), PSDP_FLOAT32, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0},
        {"emb.grad", grad_emb.data(), grad_emb.size(), PSDP_FLOAT32, PSDP_BUFFER_GRADIENT, PSDP_MEMORY_HOST, 0},
        {"norm.grad", grad_norm.data(), grad_norm.size(), PSDP_FLOAT32, PSDP_BUFFER_GRADIENT, PSDP_MEMORY_HOST, 0},
        {"proj.grad", grad_proj.data(), grad_proj.size(), PSDP_FLOAT32, PSDP_BUFFER_GRADIENT, PSDP_MEMORY_HOST, 0},
    };
  }

  // Sizes the optimizer state for `rank` from the plan of the parameters and gradients, then adds it.
  bool addOptimizerState(int nranks, int rank, const psdp_plan_config_t& config, psdp::mp::Report& report) {
    psdp_plan_h plan = nullptr;
    psdp_status_t s = psdp_plan_create(descs.data(), static_cast<int>(descs.size()), nranks, nullptr, &config, &plan);
    report.check(s == PSDP_SUCCESS, "psdp_plan_create: " + why(nullptr, s));
    if (s != PSDP_SUCCESS) return false;
    size_t owned = 0;
    psdp_plan_optimizer_state_count(plan, rank, &owned);
    psdp_plan_free(plan);
    adam_m.resize(owned);
    adam_v.resize(owned);
    descs.push_back({"adam.m", adam_m.data(), owned, PSDP_FLOAT32, PSDP_BUFFER_OPTIMIZER_STATE, PSDP_MEMORY_HOST, 0});
    descs.push_back({"adam.v", adam_v.data(), owned, PSDP_FLOAT32, PSDP_BUFFER_OPTIMIZER_STATE, PSDP_MEMORY_HOST, 0});
    return true;
  }
};

psdp_plan_config_t planConfig(int nranks) {
  psdp_plan_config_t config = PSDP_PLAN_CONFIG_INITIALIZER;
  config.group_size = nranks % 2 == 0 ? 2 : nranks;
  config.level = PSDP_SHARD_LEVEL_WORLD;
  config.chunk_bytes = 4096;
  return config;
}

bool contains(const std::string& text, const std::string& words) {
  return text.find(words) != std::string::npos;
}

void checkUsable(psdp_comm_h comm, int nranks, const std::string& after, psdp::mp::Report& report) {
  std::vector<int> data(100, 1);
  psdp_status_t s =
      psdp_all_reduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS && data[0] == nranks && data[99] == nranks,
               "the communicator is usable after " + after + ": " + why(comm, s));
}

// A registration that all ranks agree on: the plan is psdp_plan_create's, its hash the same on every rank.
void registersOnePlan(psdp_comm_h comm, int rank, int nranks, psdp::mp::Report& report) {
  Model model;
  const psdp_plan_config_t config = planConfig(nranks);
  if (!model.addOptimizerState(nranks, rank, config, report)) return;
  psdp_state_h state = nullptr;
  psdp_status_t s =
      psdp_state_register(comm, model.descs.data(), static_cast<int>(model.descs.size()), &config, &state);
  report.check(s == PSDP_SUCCESS && state != nullptr, "register: " + why(comm, s));
  if (s != PSDP_SUCCESS) return;

  psdp_plan_h registered = nullptr, standalone = nullptr;
  report.check(psdp_state_get_plan(state, &registered) == PSDP_SUCCESS, "psdp_state_get_plan");
  report.check(psdp_plan_create(model.descs.data(), static_cast<int>(model.descs.size()), nranks, nullptr, &config,
                                &standalone) == PSDP_SUCCESS,
               "psdp_plan_create");
  uint64_t hash = 0, expected = 1;
  psdp_plan_hash(registered, &hash);
  psdp_plan_hash(standalone, &expected);
  report.check(hash == expected, "the registered plan is psdp_plan_create's");
  std::vector<uint64_t> hashes(static_cast<size_t>(nranks));
  s = psdp_all_gather(&hash, hashes.data(), 1, PSDP_UINT64, comm, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS, "all-gather of the hashes: " + why(comm, s));
  for (uint64_t h : hashes) report.check(h == hash, "every rank has the same plan");
  psdp_plan_free(registered);
  psdp_plan_free(standalone);

  int count = 0;
  report.check(psdp_state_buffer_count(state, &count) == PSDP_SUCCESS && count == static_cast<int>(model.descs.size()),
               "buffer count");
  for (int i = 0; i < count; ++i) {
    psdp_buffer_desc_t b{};
    psdp_state_get_buffer(state, i, &b);
    const psdp_buffer_desc_t& want = model.descs[static_cast<size_t>(i)];
    report.check(std::string(b.name) == want.name && b.ptr == want.ptr && b.count == want.count &&
                     b.dtype == want.dtype && b.role == want.role,
                 std::string("buffer ") + want.name + " reads back as registered");
  }
  report.check(psdp_state_deregister(state) == PSDP_SUCCESS, "deregister");
  report.check(psdp_state_deregister(state) == PSDP_ERR_INVALID_USAGE, "deregister twice: invalid usage");
  report.check(psdp_state_buffer_count(state, &count) == PSDP_ERR_INVALID_USAGE, "use after deregister");
}

struct Disagreement {
  const char* name;
  // Changes what the last rank registers; before its optimizer state is sized (so that the state fits its
  // own plan) unless `after_state`.
  std::function<void(Model&, psdp_plan_config_t&)> change;
  bool after_state;
  psdp_status_t status;  // on every rank
  std::string words;     // in every rank's error
};

void failsEverywhere(psdp_comm_h comm, int rank, int nranks, const Disagreement& d, psdp::mp::Report& report) {
  const std::string name = d.name;
  Model model;
  psdp_plan_config_t config = planConfig(nranks);
  const bool odd = rank == nranks - 1;
  if (odd && !d.after_state) d.change(model, config);
  if (!model.addOptimizerState(nranks, rank, config, report)) return;
  if (odd && d.after_state) d.change(model, config);
  psdp_state_h state = nullptr;
  Clock::time_point start = Clock::now();
  psdp_status_t s =
      psdp_state_register(comm, model.descs.data(), static_cast<int>(model.descs.size()), &config, &state);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::string error = psdp_get_last_error(comm);
  report.check(s == d.status, name + ": status " + why(comm, s));
  report.check(contains(error, d.words), name + ": the error says '" + d.words + "': " + error);
  // A mismatch names the ranks on each side: the last rank is alone on its own.
  const std::string last = "rank " + std::to_string(nranks - 1);
  if (d.status == PSDP_ERR_MISMATCH) report.check(contains(error, last), name + ": the error names " + last);
  report.check(state == nullptr, name + ": nothing registered");
  report.check(seconds < kMaxSeconds, name + ": failed after " + std::to_string(seconds) + " s");
  if (rank == 0) std::printf("%s: %.3f s: %s\n", d.name, seconds, error.c_str());
  checkUsable(comm, nranks, name, report);
}

}  // namespace

int main() {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h comm = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (comm == nullptr) return 1;
  registersOnePlan(comm, rank, nranks, report);
  if (nranks > 1) {
    const std::string last = "rank " + std::to_string(nranks - 1);
    const std::vector<Disagreement> cases = {
        {"another count",
         [](Model& m, psdp_plan_config_t&) {
           m.descs[1].count = 64;  // the parameter and its gradient
           m.descs[4].count = 64;
         },
         false, PSDP_ERR_MISMATCH, "from buffers[1] on"},
        {"another name", [](Model& m, psdp_plan_config_t&) { m.descs[2].name = "projection"; }, false,
         PSDP_ERR_MISMATCH, "from buffers[2] on"},
        {"a shorter list", [](Model& m, psdp_plan_config_t&) { m.descs.pop_back(); }, true, PSDP_ERR_MISMATCH,
         "from buffers[7] on"},
        {"another configuration", [](Model&, psdp_plan_config_t& c) { c.chunk_bytes = 8192; }, false, PSDP_ERR_MISMATCH,
         "different plan configurations"},
        {"a NULL pointer on one rank", [](Model& m, psdp_plan_config_t&) { m.descs[0].ptr = nullptr; }, true,
         PSDP_ERR_INVALID_ARGUMENT, "ptr is NULL"},
        {"optimizer state of the wrong size", [](Model& m, psdp_plan_config_t&) { m.descs.back().count += 1; }, true,
         PSDP_ERR_INVALID_ARGUMENT, "adam.v"},
    };
    for (const Disagreement& d : cases) {
      Disagreement expected = d;
      // A bad argument is named on its own rank; the others name that rank.
      if (d.status == PSDP_ERR_INVALID_ARGUMENT && rank != nranks - 1) {
        expected.words = last + " rejected its own buffer list";
      }
      failsEverywhere(comm, rank, nranks, expected, report);
    }
  }
  report.check(psdp_comm_finalize(comm) == PSDP_SUCCESS, "finalize");
  report.check(psdp_comm_destroy(comm) == PSDP_SUCCESS, "destroy");
  return report.finish();
}
