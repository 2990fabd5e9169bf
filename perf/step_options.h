// Command line of psdp-perf step (perf/psdp_perf_step.cc), kept apart so that it can be unit tested.
#pragma once

#include <cstddef>
#include <string>

namespace psdp::perf {

struct StepOptions {
  std::string model_path;                   // --model: a shape file; empty: the installed qwen2.5.json
  std::string model_name = "Qwen2.5-0.5B";  // --name
  double scale = 1.0;                       // --scale: each tensor's leading dimension times this (at least 1)
  size_t bytes = 0;                         // --bytes: one tensor of this many bytes instead of a model
  bool per_tensor = false;                  // --per-tensor: a buffer per tensor, not one flat buffer
  size_t chunk_bytes = 0;                   // --chunk-bytes; 0: the plan's default
  size_t window = 2;                        // --window: reduce and gather windows; 0: the tuning file's
  size_t grouping = 1;                      // --grouping: plan chunks per transfer; 0: the tuning file's
  size_t fragment = 0;                      // --fragment: of the step's ring transfers; 0: the engine's
  int group = 0;                            // --group: G; 0: every rank
  bool world_level = false;                 // --level world
  int iters = 5;                            // --iters: timed steps per mode
  int warmup = 1;                           // --warmup
  bool pipelined = true, bulk = true;       // --mode both|pipelined|bulk
  bool gather_forward = false;              // --gather-order forward: gathers from chunk 0 (psdp's default)
  bool bulk_chunked = false;                // --bulk-plan chunked: bulk on the pipelined plan (packs)
  bool update_during_backward = false;      // --update-during-backward: take reduced chunks between buckets
  bool adam = true;                         // --optimizer adam|sgd
  bool mixed = false;                       // --precision bf16: bfloat16 parameters and gradients, float32
                                            // master weights and gradient shard
  bool bf16_partials = false;               // --partials bf16: psdp's partial sums in bfloat16
  double backward_ms = 0;                   // --backward-ms
  bool shared_buffers = false;              // --shared: buffers from psdp_mem_alloc
  bool online = false;                      // --online: the engine tunes the window, grouping and fragment
                                            // left at 0 during warm-up steps, until it keeps a choice
  std::string online_out;                   // --online-out FILE: that choice as a tuning file
  std::string trace_path;                   // --trace FILE
  std::string json_path;                    // -J FILE
  bool help = false;
};

const char* stepUsage();
// Parses argv[first..argc); false with a one-line message for a bad command line.
bool parseStepOptions(int argc, char** argv, int first, StepOptions* options, std::string* error);

}  // namespace psdp::perf
