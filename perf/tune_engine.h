// psdp-tune's engine sweep: the chunk engine's windows and grouping (tune_sweep.h, EngineCandidate) on the
// pipelined step of a model-shaped state, as psdp-perf step runs it (perf/step_bench.h), per plan chunk size.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <vector>

#include "step_options.h"
#include "tune_sweep.h"

namespace psdp::perf {

struct EngineSweepOptions {
  StepOptions step;                 // the state: model, scale, precision, buffers (chunk_bytes: set per size)
  std::vector<size_t> chunk_sizes;  // plan chunk sizes, increasing
  bool quick = false;               // engineCandidates(quick, ...)
  int repetitions = 5;
  // --verify: the built-in setting against what `comm`'s tuning file says (candidates kBuiltInEngine and
  // {0, 0}) instead of the sweep's candidates.
  bool verify = false;
};

// Registers the state on `comm` once per chunk size and times, per repetition, one pipelined step of every
// candidate in an order rotated from one repetition to the next; a step's time is the slowest rank's (an
// all-reduce over `comm`), so every rank holds the same numbers and picks the same winners. `progress`, on
// rank 0: a line per chunk size swept. Exits the process, as psdp-perf step does, when a call fails or the
// state's buffers cannot be mapped.
std::vector<EngineSweep> sweepEngine(psdp_comm_h comm, const EngineSweepOptions& o, bool progress);

}  // namespace psdp::perf
