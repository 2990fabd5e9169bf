// psdp-perf step: the time of a whole sharded training step (psdp_step_begin to psdp_step_end) of a
// model-shaped state (float32, or bfloat16 with float32 master weights), pipelined against bulk mode in the
// same run, interleaved, with the optimizer (Adam by default) on the owned pieces: the tool plays the
// framework, psdp runs no model math. Each step is what a training loop does: backward writes each bucket of
// gradients (a chunk's worth, last layer first) and reports it, the loop takes each reduced chunk, updates its
// owned ranges and marks it updated, and the step ends once every chunk is gathered. Communication alone (no
// update) and the update alone (no psdp) are measured in the same run, which gives the overlap each mode
// achieves. Ranks report the slowest rank's time per step.
#include "psdp_perf_step.h"

#include <psdp/psdp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "step_bench.h"
#include "step_options.h"
#include "step_report.h"
#include "step_trace.h"
#include "step_traffic.h"
#include "tune_sweep.h"

namespace psdp::perf {
namespace {

using tools::TensorShape;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A fragment setting: "own" for the collectives' own (0).
std::string fragmentText(size_t bytes) {
  return bytes == 0 ? std::string("own") : sizeText(bytes);
}

// --online: pipelined steps until the engine keeps its choice (at most kMaxOnlineSteps), each printed by
// rank 0 with the setting it ran and the slowest rank's time; then, with --online-out, the choice as a
// tuning file. False: the engine did not settle in time, or the file could not be written.
bool tuneOnline(StepBench& bench, psdp_comm_h comm, const StepOptions& o, int rank, int nranks, size_t chunk_bytes) {
  constexpr int kMaxOnlineSteps = 64;
  const psdp_state_h state = bench.of(kPipelined).state;
  psdp_engine_tuning_t tuning{};
  for (int i = 0; i < kMaxOnlineSteps; ++i) {
    double seconds = bench.run(kPipelined);
    STEP_CHECK(psdp_all_reduce(&seconds, &seconds, 1, PSDP_FLOAT64, PSDP_MAX, comm, nullptr, nullptr));
    STEP_CHECK(psdp_state_engine_tuning(state, &tuning));
    if (rank == 0) {
      std::printf("# online tuning, step %2d: window %zu x%zu fragment %-5s %8.1f ms%s\n", i, tuning.window,
                  tuning.chunks_per_transfer, fragmentText(tuning.fragment_bytes).c_str(), seconds * 1e3,
                  i == 0 ? " (not counted)" : (tuning.phase == PSDP_ENGINE_TUNING_FROZEN ? " (kept)" : ""));
    }
    if (tuning.phase == PSDP_ENGINE_TUNING_FROZEN) break;
  }
  if (tuning.phase != PSDP_ENGINE_TUNING_FROZEN) {
    if (rank == 0) std::fprintf(stderr, "psdp-perf step: online tuning did not settle in %d steps\n", kMaxOnlineSteps);
    return false;
  }
  if (rank == 0) {
    std::printf(
        "# online tuning kept window %zu x%zu fragment %s after %zu steps: %.1f ms a step, %.2fx the "
        "start's\n",
        tuning.window, tuning.chunks_per_transfer, fragmentText(tuning.fragment_bytes).c_str(), tuning.steps,
        tuning.step_s * 1e3, tuning.start_step_s / tuning.step_s);
  }
  if (o.online_out.empty()) return true;
  size_t len = 0;
  STEP_CHECK(psdp_comm_interconnect(comm, nullptr, &len));
  std::string signature(len, '\0');
  STEP_CHECK(psdp_comm_interconnect(comm, signature.data(), &len));
  signature.resize(len - 1);
  if (rank != 0) return true;
  std::FILE* f = std::fopen(o.online_out.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "psdp-perf step: cannot write %s\n", o.online_out.c_str());
    return false;
  }
  const std::string fragment =
      tuning.fragment_bytes == 0 ? std::string() : " fragment=" + sizeText(tuning.fragment_bytes);
  std::fprintf(f,
               "psdp-tuning 1\n# psdp-perf step --online: the engine's choice after %zu steps (%.1f ms a step)\n"
               "signature %s\nengine ranks=%d chunk-bytes=%s-%s window=%zu grouping=%zu%s\n",
               tuning.steps, tuning.step_s * 1e3, signature.c_str(), nranks, sizeText(chunk_bytes).c_str(),
               sizeText(2 * chunk_bytes).c_str(), tuning.window, tuning.chunks_per_transfer, fragment.c_str());
  return std::fclose(f) == 0;
}

}  // namespace

int runStepBenchmark(int argc, char** argv, int first) {
  StepOptions o;
  std::string error;
  if (!parseStepOptions(argc, argv, first, &o, &error)) {
    std::fprintf(stderr, "psdp-perf step: %s\n", error.c_str());
    return 2;
  }
  if (o.help) {
    std::fputs(stepUsage(), stdout);
    return 0;
  }
  std::string model, model_path;
  const std::vector<TensorShape> tensors = stepTensors(o, &model, &model_path, &error);
  if (tensors.empty()) {
    std::fprintf(stderr, "psdp-perf step: %s\n", error.c_str());
    return 2;
  }
  psdp_comm_h comm = nullptr;
  STEP_CHECK(psdp_comm_init_from_env(nullptr, &comm));
  int rank = 0, nranks = 1;
  psdp_comm_rank(comm, &rank);
  psdp_comm_size(comm, &nranks);
  if (o.group != 0 && nranks % o.group != 0) {
    if (rank == 0) std::fprintf(stderr, "psdp-perf step: --group %d does not divide the %d ranks\n", o.group, nranks);
    psdp_comm_destroy(comm);
    return 2;
  }
  const int ranks_on_host = ranksOnHost(comm);
  int code = 0;
  {
    StepBench bench(o, comm);
    if (!bench.setUp(tensors)) {
      std::fprintf(stderr, "psdp-perf step: rank %d: cannot map the state's buffers\n", rank);
      std::exit(1);
    }
    StepTrafficParams tp;
    tp.rank = rank;
    tp.group = bench.group();
    tp.replicas = nranks / bench.group();
    tp.world_level = o.world_level;
    tp.optimizer_buffers = o.adam ? 2 : 0;
    tp.elem_bytes = o.mixed ? 2 : 4;
    tp.wire_bytes = o.mixed && o.bf16_partials ? 2 : 4;
    tp.gradient_shard = o.mixed;
    tp.window_chunks = 2 * (o.window == 0 ? 2 : o.window);  // a tuning file's window: as the built-in
    tp.ranks_on_host = ranks_on_host;
    tp.cache_bytes = lastLevelCacheBytes();
    tp.parameter_counts = bench.parameterCounts();
    StepTraffic traffic, bulk_traffic;
    if (o.pipelined) traffic = stepTraffic(bench.of(kPipelined).plan, tp, true);
    if (o.bulk) bulk_traffic = stepTraffic(bench.of(kBulk).plan, tp, false);
    std::vector<StepMode> modes;
    if (o.pipelined) modes.push_back(kPipelined);
    if (o.bulk) modes.push_back(kBulk);
    modes.push_back(kCommOnly);
    modes.push_back(kUpdateOnly);
    // The plan's default chunk is 64 MiB (psdp_plan_config_t).
    if (o.online && !tuneOnline(bench, comm, o, rank, nranks, o.chunk_bytes == 0 ? size_t{64} << 20 : o.chunk_bytes)) {
      code = 1;
    }
    for (int i = 0; i < o.warmup; ++i) {
      for (StepMode m : modes) bench.run(m);
    }
    // Each iteration runs every mode, rotated by one each time: none always runs first.
    std::vector<double> mine(static_cast<size_t>(o.iters) * kStepModes, 0.0);
    for (int i = 0; i < o.iters; ++i) {
      for (size_t k = 0; k < modes.size(); ++k) {
        const StepMode m = modes[(k + static_cast<size_t>(i)) % modes.size()];
        mine[static_cast<size_t>(i) * kStepModes + m] = bench.run(m);
      }
    }
    std::vector<double> slowest(mine.size());
    STEP_CHECK(
        psdp_all_reduce(mine.data(), slowest.data(), mine.size(), PSDP_FLOAT64, PSDP_MAX, comm, nullptr, nullptr));
    StepResults results;
    for (StepMode m : modes) {
      std::vector<double> t;
      for (int i = 0; i < o.iters; ++i) t.push_back(slowest[static_cast<size_t>(i) * kStepModes + m]);
      results.present[m] = true;
      results.median[m] = median(t);
      results.min[m] = *std::min_element(t.begin(), t.end());
      results.max[m] = *std::max_element(t.begin(), t.end());
    }
    if (!o.trace_path.empty()) {
      bench.run(o.pipelined ? kPipelined : kBulk);
      if (!writeStepTrace(comm, bench.of(kCommOnly).state, o.trace_path)) code = 1;
    }
    if (rank == 0) {
      StepSetup setup{model,
                      model_path,
                      tensors.size(),
                      bench.elements(),
                      bench.buffers(),
                      nranks,
                      bench.group(),
                      bench.of(kCommOnly).chunks,
                      bench.of(kCommOnly).owned,
                      ranks_on_host,
                      tp.cache_bytes};
      printStepReport(o, setup, traffic, bulk_traffic, results, stdout);
      if (!o.json_path.empty() && !writeStepJson(o, setup, traffic, bulk_traffic, results, o.json_path)) code = 1;
    }
  }
  STEP_CHECK(psdp_comm_finalize(comm));
  psdp_comm_destroy(comm);
  return code;
}

}  // namespace psdp::perf
