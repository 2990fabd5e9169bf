#include "tune_engine.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "step_bench.h"

namespace psdp::perf {

std::vector<EngineSweep> sweepEngine(psdp_comm_h comm, const EngineSweepOptions& o, bool progress) {
  int rank = 0;
  STEP_CHECK(psdp_comm_rank(comm, &rank));
  std::string model, model_path, error;
  const std::vector<tools::TensorShape> tensors = stepTensors(o.step, &model, &model_path, &error);
  if (tensors.empty()) {
    std::fprintf(stderr, "psdp-tune: rank %d: %s\n", rank, error.c_str());
    std::exit(2);
  }
  const auto began = std::chrono::steady_clock::now();
  std::vector<EngineSweep> sweeps;
  for (size_t chunk_bytes : o.chunk_sizes) {
    StepOptions step = o.step;
    step.chunk_bytes = chunk_bytes;
    step.pipelined = true;
    step.bulk = false;
    EngineSweep sweep;
    sweep.chunk_bytes = chunk_bytes;
    sweep.candidates =
        o.verify ? std::vector<EngineCandidate>{kBuiltInEngine, {0, 0}} : engineCandidates(o.quick, chunk_bytes);
    sweep.seconds.resize(sweep.candidates.size());
    StepBench bench(step, comm);
    if (!bench.setUp(tensors)) {
      std::fprintf(stderr, "psdp-tune: rank %d: cannot map the state's buffers\n", rank);
      std::exit(1);
    }
    sweep.chunks = bench.of(kPipelined).chunks;
    // One untimed step touches every page of the state before anything is timed.
    bench.setEngine(kBuiltInEngine.window, kBuiltInEngine.grouping);
    bench.run(kPipelined);
    for (int r = 0; r < o.repetitions; ++r) {
      for (size_t k = 0; k < sweep.candidates.size(); ++k) {
        const size_t c = (k + static_cast<size_t>(r)) % sweep.candidates.size();
        bench.setEngine(sweep.candidates[c].window, sweep.candidates[c].grouping);
        double seconds = bench.run(kPipelined);
        STEP_CHECK(psdp_all_reduce(&seconds, &seconds, 1, PSDP_FLOAT64, PSDP_MAX, comm, nullptr, nullptr));
        sweep.seconds[c].push_back(seconds);
      }
    }
    if (progress) {
      std::printf("# engine: %s, plan chunks of %zu bytes (%zu): %zu candidates swept, %.0f s so far\n", model.c_str(),
                  chunk_bytes, sweep.chunks, sweep.candidates.size(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
      std::fflush(stdout);
    }
    sweeps.push_back(std::move(sweep));
  }
  return sweeps;
}

}  // namespace psdp::perf
