// Steps used wrongly and steps whose peer dies.
//   mp_step_faults            every rank makes the same mistakes: step calls out of order (begin twice,
//                             update before a chunk is handed out, end with chunks outstanding, backward done
//                             twice), ranges outside the buffers or reported twice, a parameter wait that
//                             only the caller's own update could satisfy: each a clear error, the step still
//                             usable after it; then one rank that never reports a buffer under the "error"
//                             unused policy: it fails naming the buffer, and every other rank's step fails at
//                             once; the dead step's handle is refused afterwards; ranks that begin a step
//                             with different orders fail with a mismatch naming a rank.
//   mp_step_faults VICTIM DIR (expect_rank_killed.sh) the victim is SIGKILLed in the middle of a step; every
//                             survivor's step fails (remote error or timeout) within PSDP_TIMEOUT.
#include <psdp/psdp.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kCount = 3000;

struct State {
  std::vector<float> w0 = std::vector<float>(kCount, 1.0f), w1 = std::vector<float>(kCount, 2.0f);
  std::vector<float> g0 = std::vector<float>(kCount, 1.0f), g1 = std::vector<float>(kCount, 1.0f);
  std::vector<float> opt;
  psdp_state_h handle = nullptr;
  size_t chunks = 0;

  bool make(psdp_comm_h comm, int rank, psdp::mp::Report& report) {
    psdp_plan_config_t config = PSDP_PLAN_CONFIG_INITIALIZER;
    config.chunk_bytes = 4096;
    std::vector<psdp_buffer_desc_t> descs = {
        {"w0", w0.data(), kCount, PSDP_FLOAT32, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0},
        {"w1", w1.data(), kCount, PSDP_FLOAT32, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0},
        {"w0.grad", g0.data(), kCount, PSDP_FLOAT32, PSDP_BUFFER_GRADIENT, PSDP_MEMORY_HOST, 0},
        {"w1.grad", g1.data(), kCount, PSDP_FLOAT32, PSDP_BUFFER_GRADIENT, PSDP_MEMORY_HOST, 0},
    };
    psdp_plan_h plan = nullptr;
    int nranks = 0;
    psdp_comm_size(comm, &nranks);
    std::vector<int> layout(static_cast<size_t>(nranks));
    psdp_comm_get_layout(comm, nranks, layout.data());
    psdp_plan_create(descs.data(), static_cast<int>(descs.size()), nranks, layout.data(), &config, &plan);
    size_t owned = 0;
    psdp_plan_optimizer_state_count(plan, rank, &owned);
    psdp_plan_chunk_count(plan, &chunks);
    psdp_plan_free(plan);
    opt.resize(owned);
    descs.push_back({"opt", opt.data(), owned, PSDP_FLOAT32, PSDP_BUFFER_OPTIMIZER_STATE, PSDP_MEMORY_HOST, 0});
    psdp_status_t s = psdp_state_register(comm, descs.data(), static_cast<int>(descs.size()), &config, &handle);
    report.check(s == PSDP_SUCCESS, "register: " + why(comm, s));
    return s == PSDP_SUCCESS;
  }
};

bool has(const std::string& text, const std::string& words) {
  return text.find(words) != std::string::npos;
}

// `s` is `want` and the last error contains `words`.
void expectError(psdp::mp::Report& report, psdp_status_t s, psdp_status_t want, const std::string& words,
                 const std::string& what) {
  const std::string error = psdp_get_last_error(nullptr);
  report.check(s == want && has(error, words), what + ": got " + psdp_status_string(s) + " '" + error + "', wanted " +
                                                   psdp_status_string(want) + " with '" + words + "'");
}

// Takes and updates every chunk, waiting up to 30 s for each.
bool updateAll(psdp_step_h step, size_t chunks, psdp::mp::Report& report, const std::string& what) {
  for (size_t done = 0; done < chunks;) {
    psdp_step_chunk_t chunk = PSDP_STEP_CHUNK_INITIALIZER;
    psdp_status_t s = psdp_step_next_chunk(step, 30.0, &chunk);
    if (s != PSDP_SUCCESS || chunk.chunk == PSDP_STEP_NO_CHUNK) {
      report.check(false, what + ": no chunk: " + why(nullptr, s));
      return false;
    }
    report.check(psdp_step_chunk_updated(step, chunk.chunk) == PSDP_SUCCESS, what + ": chunk_updated");
    ++done;
  }
  return true;
}

void misuse(psdp_comm_h comm, int rank, int nranks, psdp::mp::Report& report) {
  State state;
  if (!state.make(comm, rank, report)) return;
  psdp_step_h step = nullptr;
  psdp_step_config_t bad = PSDP_STEP_CONFIG_INITIALIZER;
  bad.grad_norm = 7;
  expectError(report, psdp_step_begin(state.handle, &bad, &step), PSDP_ERR_INVALID_ARGUMENT, "grad_norm 7",
              "an unknown norm policy");
  bad = PSDP_STEP_CONFIG_INITIALIZER;
  bad.partial_sums = 5;
  expectError(report, psdp_step_begin(state.handle, &bad, &step), PSDP_ERR_INVALID_ARGUMENT, "partial_sums 5",
              "an unknown partial-sum dtype");
  bad = PSDP_STEP_CONFIG_INITIALIZER;
  bad.online_tuning = 2;
  expectError(report, psdp_step_begin(state.handle, &bad, &step), PSDP_ERR_INVALID_ARGUMENT, "online_tuning 2",
              "online tuning neither on nor off");
  bad = PSDP_STEP_CONFIG_INITIALIZER;
  bad.fragment_bytes = 32;
  expectError(report, psdp_step_begin(state.handle, &bad, &step), PSDP_ERR_INVALID_ARGUMENT, "fragment_bytes 32",
              "a fragment below the smallest");
  bad.fragment_bytes = size_t{1} << 30;
  expectError(report, psdp_step_begin(state.handle, &bad, &step), PSDP_ERR_INVALID_ARGUMENT,
              "fragment_bytes 1073741824: the state's collectives stage fragments of 64 to",
              "a fragment beyond the staging");
  psdp_engine_tuning_t tuning;
  report.check(
      psdp_state_engine_tuning(state.handle, &tuning) == PSDP_SUCCESS && tuning.phase == PSDP_ENGINE_TUNING_OFF,
      "engine tuning off before any step asked for it");
  expectError(report, psdp_state_engine_tuning(state.handle, nullptr), PSDP_ERR_INVALID_ARGUMENT, "tuning_p",
              "engine tuning into NULL");
  report.check(psdp_step_begin(state.handle, nullptr, &step) == PSDP_SUCCESS, "begin");
  psdp_grad_norm_t norm;
  expectError(report, psdp_step_grad_norm(step, 0.0, &norm), PSDP_ERR_INVALID_USAGE, "no gradient norm",
              "the norm of a step without a norm policy");
  expectError(report, psdp_step_grad_norm(step, 0.0, nullptr), PSDP_ERR_INVALID_ARGUMENT, "norm_p", "norm_p NULL");
  psdp_step_h second = nullptr;
  expectError(report, psdp_step_begin(state.handle, nullptr, &second), PSDP_ERR_INVALID_USAGE, "has not ended",
              "begin twice");
  expectError(report, psdp_step_chunk_updated(step, 0), PSDP_ERR_INVALID_USAGE, "not handed out",
              "update before the chunk was handed out");
  expectError(report, psdp_step_chunk_updated(step, 999), PSDP_ERR_INVALID_ARGUMENT, "chunk 999",
              "update of a chunk that does not exist");
  expectError(report, psdp_step_grads_ready(step, 0, kCount - 10, 20), PSDP_ERR_INVALID_ARGUMENT, "past its",
              "a range past the buffer");
  expectError(report, psdp_step_grads_ready(step, 4, 0, 1), PSDP_ERR_INVALID_ARGUMENT, "optimizer state",
              "gradients of optimizer state");
  expectError(report, psdp_step_grads_ready(step, 9, 0, 1), PSDP_ERR_INVALID_ARGUMENT, "buffer 9",
              "a buffer that does not exist");
  report.check(psdp_step_grads_ready(step, 2, 0, 100) == PSDP_SUCCESS, "grads_ready [0, 100) of w0.grad");
  expectError(report, psdp_step_grads_ready(step, 0, 50, 100), PSDP_ERR_INVALID_USAGE, "overlap [0, 100)",
              "a range reported twice");
  expectError(report, psdp_step_next_chunk(step, 0.0, nullptr), PSDP_ERR_INVALID_ARGUMENT, "chunk_p",
              "next_chunk without an output");
  psdp_step_chunk_t chunk = PSDP_STEP_CHUNK_INITIALIZER;
  expectError(report, psdp_step_next_chunk(step, -1.0, &chunk), PSDP_ERR_INVALID_ARGUMENT, "timeout_s",
              "a negative timeout");
  expectError(report, psdp_step_end(step), PSDP_ERR_INVALID_USAGE, "update every chunk first",
              "end with chunks outstanding");
  expectError(report, psdp_step_wait_params(step, 1, 0, kCount, 5.0), PSDP_ERR_INVALID_USAGE, "before the framework",
              "a parameter wait only the caller's update could satisfy");
  // Everything else now; the step goes on normally after all of the above.
  report.check(psdp_step_grads_ready(step, 2, 100, kCount - 100) == PSDP_SUCCESS, "grads_ready rest of w0");
  report.check(psdp_step_grads_ready(step, PSDP_STEP_ALL_BUFFERS, 0, 0) == PSDP_SUCCESS, "grads_ready all");
  report.check(psdp_step_backward_done(step) == PSDP_SUCCESS, "backward_done");
  expectError(report, psdp_step_backward_done(step), PSDP_ERR_INVALID_USAGE, "done already", "backward done twice");
  if (updateAll(step, state.chunks, report, "misuse step")) {
    report.check(psdp_step_wait_params(step, 0, 0, kCount, 30.0) == PSDP_SUCCESS, "wait_params");
    psdp_status_t s = psdp_step_end(step);
    report.check(s == PSDP_SUCCESS, "end: " + why(nullptr, s));
  }
  expectError(report, psdp_step_end(step), PSDP_ERR_INVALID_USAGE, "not a live step", "the ended step's handle");

  // Unused gradients under the error policy: the last rank never reports w1. It fails naming it; the others'
  // steps fail too, at once, not at their timeout.
  const bool skips = rank == nranks - 1;
  const auto start = Clock::now();
  // Once the last rank has failed, any call here may return its failure: the begin itself too, on a rank that
  // finished the step before later than the last rank began this one.
  psdp_status_t s = psdp_step_begin(state.handle, nullptr, &step);
  const bool begun = s == PSDP_SUCCESS;
  report.check(begun || !skips, "begin 2 on the rank that skips: " + why(nullptr, s));
  if (s == PSDP_SUCCESS) s = psdp_step_grads_ready(step, 2, 0, kCount);
  if (s == PSDP_SUCCESS && !skips) s = psdp_step_grads_ready(step, 3, 0, kCount);
  if (s == PSDP_SUCCESS) s = psdp_step_backward_done(step);
  if (skips) {
    expectError(report, s, PSDP_ERR_INVALID_USAGE, "buffer 1 ('w1') were never reported", "unused gradients");
  } else {
    for (size_t i = 0; i < state.chunks && s == PSDP_SUCCESS; ++i) {
      psdp_step_chunk_t c = PSDP_STEP_CHUNK_INITIALIZER;
      s = psdp_step_next_chunk(step, 60.0, &c);
      if (s == PSDP_SUCCESS && c.chunk != PSDP_STEP_NO_CHUNK) s = psdp_step_chunk_updated(step, c.chunk);
    }
    if (s == PSDP_SUCCESS) s = psdp_step_end(step);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const std::string error = psdp_get_last_error(nullptr);
    report.check(s != PSDP_SUCCESS && seconds < 10.0 && has(error, "never reported ready"),
                 "a peer's unused gradients fail this rank's step within 10 s, naming why: " + std::to_string(seconds) +
                     " s, " + why(nullptr, s));
  }
  if (begun) {
    s = psdp_step_end(step);
    report.check(s != PSDP_SUCCESS, "end of the failed step returns its error");
    expectError(report, psdp_step_end(step), PSDP_ERR_INVALID_USAGE, "not a live step", "the failed step's handle");
  }
  report.check(psdp_state_deregister(state.handle) == PSDP_SUCCESS, "deregister");

  // The step's settings every rank must share: the last rank asks for reductions in forward order.
  State other;
  if (!other.make(comm, rank, report)) return;
  psdp_step_config_t config = PSDP_STEP_CONFIG_INITIALIZER;
  if (rank == nranks - 1) config.reduce_order = PSDP_STEP_ORDER_FORWARD;
  s = psdp_step_begin(other.handle, &config, &step);
  const std::string odd = "rank " + std::to_string(rank == nranks - 1 ? 0 : nranks - 1);
  expectError(report, s, PSDP_ERR_MISMATCH,
              "orders, op, chunks per transfer, online tuning, norm policy and partial sums",
              "begin with another order");
  report.check(has(psdp_get_last_error(nullptr), odd),
               "the mismatch names " + odd + ": " + psdp_get_last_error(nullptr));
  report.check(psdp_state_deregister(other.handle) == PSDP_SUCCESS, "deregister the other state");
}

void peerDeath(psdp_comm_h comm, int rank, int victim, psdp::mp::Report& report) {
  State state;
  if (!state.make(comm, rank, report)) return;
  const double limit = std::atof(std::getenv("PSDP_TIMEOUT") ? std::getenv("PSDP_TIMEOUT") : "60") + 5;
  const auto start = Clock::now();
  // From begin on, any call of a survivor may be the one that returns the victim's failure: the victim may
  // die while a survivor's part of begin's agreement, or of its first reduction, is still under way.
  psdp_step_h step = nullptr;
  psdp_status_t s = psdp_step_begin(state.handle, nullptr, &step);
  if (s == PSDP_SUCCESS) s = psdp_step_grads_ready(step, 2, 0, kCount);
  if (rank == victim) raise(SIGKILL);
  if (s == PSDP_SUCCESS) s = psdp_step_grads_ready(step, 3, 0, kCount);
  if (s == PSDP_SUCCESS) s = psdp_step_backward_done(step);
  bool ended = false;
  while (s == PSDP_SUCCESS && !ended && std::chrono::duration<double>(Clock::now() - start).count() < 2 * limit) {
    psdp_step_chunk_t c = PSDP_STEP_CHUNK_INITIALIZER;
    s = psdp_step_next_chunk(step, 1.0, &c);
    if (s == PSDP_SUCCESS && c.chunk != PSDP_STEP_NO_CHUNK) s = psdp_step_chunk_updated(step, c.chunk);
    if (s == PSDP_SUCCESS && c.remaining == 0 && c.chunk == PSDP_STEP_NO_CHUNK) {
      s = psdp_step_end(step);
      ended = true;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const std::string error = psdp_get_last_error(nullptr);
  report.check(
      (s == PSDP_ERR_REMOTE || s == PSDP_ERR_TIMEOUT || s == PSDP_ERR_ABORTED) && seconds < limit,
      "the step fails within the timeout: " + std::to_string(seconds) + " s, " + psdp_status_string(s) + " " + error);
  std::printf("rank %d: step failed after %.3f s: %s\n", rank, seconds, error.c_str());
  if (step != nullptr && !ended) (void)psdp_step_end(step);
  report.check(psdp_state_deregister(state.handle) == PSDP_SUCCESS, "deregister");
}

}  // namespace

int main(int argc, char** argv) {
  psdp::mp::Report report;
  int rank = 0, nranks = 0;
  psdp_comm_h comm = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (comm == nullptr) return 1;
  if (argc >= 3) {
    peerDeath(comm, rank, std::atoi(argv[1]), report);
    psdp_comm_destroy(comm);  // the world lost a rank: no finalize
  } else {
    misuse(comm, rank, nranks, report);
    report.check(psdp_comm_finalize(comm) == PSDP_SUCCESS, "finalize");
    psdp_comm_destroy(comm);
  }
  return report.finish();
}
