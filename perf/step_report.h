// What psdp-perf step prints (a table for people) and writes with -J (JSON for scripts).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include "step_options.h"
#include "step_traffic.h"

namespace psdp::perf {

enum StepMode { kPipelined, kBulk, kCommOnly, kUpdateOnly, kStepModes };
const char* stepModeName(StepMode mode);  // "pipelined", "bulk", "comm only", "update only"

// Seconds per step of the slowest rank, per mode.
struct StepResults {
  bool present[kStepModes] = {};
  double median[kStepModes] = {}, min[kStepModes] = {}, max[kStepModes] = {};
};

struct StepSetup {
  std::string model;
  std::string model_path;  // the shape file, or empty
  size_t tensors = 0, elements = 0, buffers = 0;
  int nranks = 1, group = 1;
  size_t chunks = 0, owned = 0;  // of the pipelined plan (or the bulk one when only it runs)
  int ranks_on_host = 1;
  size_t cache_bytes = 0;
};

// Of a mode that overlaps communication with the update: the time hidden, comm only + update only - step,
// over the smaller of the two (1: the shorter is hidden entirely; 0: none of it).
double overlapAchieved(const StepResults& r, StepMode mode);

// pipelined, bulk: the traffic of each mode's steps (the one not measured is left empty).
void printStepReport(const StepOptions& o, const StepSetup& s, const StepTraffic& pipelined, const StepTraffic& bulk,
                     const StepResults& r, FILE* out);
bool writeStepJson(const StepOptions& o, const StepSetup& s, const StepTraffic& pipelined, const StepTraffic& bulk,
                   const StepResults& r, const std::string& path);

}  // namespace psdp::perf
