// The framework's side of a sharded training step on a model-shaped state, for psdp-perf step and
// psdp-tune's engine sweep: the state's buffers, its registrations, and one step in a given mode with the
// optimizer (Adam by default) on the owned pieces. The tool plays the framework; psdp runs no model math.
#pragma once

#include <psdp/psdp.h>

#include <errno.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "framework_kernels.h"
#include "host_buffer.h"
#include "model_shapes.h"
#include "step_options.h"
#include "step_report.h"

// Exits the process with status 1 when a psdp call fails, saying which and why.
#define STEP_CHECK(call)                                                                                            \
  do {                                                                                                              \
    psdp_status_t s_ = (call);                                                                                      \
    if (s_ != PSDP_SUCCESS) {                                                                                       \
      std::fprintf(stderr, "%s: %s failed: %s: %s\n", program_invocation_short_name, #call, psdp_status_string(s_), \
                   psdp_get_last_error(NULL));                                                                      \
      std::exit(1);                                                                                                 \
    }                                                                                                               \
  } while (0)

namespace psdp::perf {

// The tensors to register: a model's from its shape file (scaled), or one tensor of --bytes. *model: its
// name; *model_path: the shape file read (the installed one unless --model says). Empty, with *error, when
// the file cannot be read.
std::vector<tools::TensorShape> stepTensors(const StepOptions& o, std::string* model, std::string* model_path,
                                            std::string* error);

// How many ranks of `comm` share this rank's host (hosts compared by name); collective.
int ranksOnHost(psdp_comm_h comm);

// One registration of the state's buffers: its plan, and where each chunk's owned elements are.
struct Registration {
  psdp_state_h state = nullptr;
  psdp_plan_h plan = nullptr;
  size_t chunks = 0;
  size_t owned = 0;
  std::vector<size_t> state_offset;  // per chunk: its first owned element in the optimizer state
  std::vector<std::vector<psdp_owned_range_t>> owned_ranges;

  Registration() = default;
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  ~Registration();
};

// Pipelined steps run on a plan of --chunk-bytes chunks; bulk steps on a plan of one chunk per space, where
// each rank owns one contiguous piece of the flat buffer, as ZeRO-2 and Megatron's distributed optimizer lay
// it out, so that bulk reduces and gathers in place like them (on the chunked plan, a rank's pieces are
// spread over every chunk and a whole-space collective must pack them). Flat buffers are padded to a
// multiple of W alignment units, as those frameworks pad theirs, so that no piece needs padding. Mixed
// precision (--precision bf16): bfloat16 parameters and gradients; the optimizer state holds float32 master
// weights, and psdp delivers each reduced chunk into a float32 gradient shard, laid out like it, from which
// the update reads.
//
// Every failed call prints what failed and exits the process with status 1, as a benchmark should.
class StepBench {
 public:
  // `o` outlives the bench. The state is registered on `comm` (its tuning file serves windows and grouping
  // of 0).
  StepBench(const StepOptions& o, psdp_comm_h comm);
  StepBench(const StepBench&) = delete;
  StepBench& operator=(const StepBench&) = delete;

  // Maps the buffers and registers the state for the modes `o` asks for. False: the buffers cannot be mapped.
  bool setUp(const std::vector<tools::TensorShape>& tensors);

  // The windows and grouping the next steps ask for (psdp_step_config_t: 0 leaves them to the tuning file's
  // engine rule, else the built-in 2 and 1). Initially --window and --grouping.
  void setEngine(size_t window, size_t grouping) {
    window_ = window;
    grouping_ = grouping;
  }
  // Whether pipelined steps ask the engine to tune online what setEngine leaves at 0 (initially --online).
  void setOnlineTuning(bool on) { online_ = on; }

  // One step in `mode` after a barrier; returns this rank's seconds.
  double run(StepMode mode);

  // The registration a mode's steps run on: comm only and update only on the pipelined one, unless only
  // bulk mode is measured.
  const Registration& of(StepMode mode) const;
  size_t elements() const { return elements_; }
  int group() const { return group_; }
  size_t buffers() const { return counts_.size(); }
  const std::vector<size_t>& parameterCounts() const { return counts_; }

 private:
  psdp_plan_config_t planConfig(size_t chunk_bytes) const;
  size_t ownedBy(size_t chunk_bytes) const;
  void registerState(size_t chunk_bytes, size_t owned, Registration& r);
  void fillOnes(std::byte* buffer, size_t begin, size_t end) const;
  void optimizerUpdate(float* p, const float* g, size_t at, size_t n);
  void update(const Registration& reg, size_t chunk, const psdp_owned_range_t* ranges, size_t nranges);
  size_t updateReduced(const Registration& reg, psdp_step_h step, double timeout_s, bool apply);
  void step(const Registration& reg, StepMode mode);

  const StepOptions& o_;
  psdp_comm_h comm_;
  int rank_ = 0, nranks_ = 1, group_ = 1;
  size_t window_, grouping_;
  bool online_;
  size_t elements_ = 0;
  size_t elem_bytes_ = 4;  // of the parameters and gradients
  std::unique_ptr<HostBuffer> params_, grads_, owned_state_;
  std::vector<std::byte*> param_ptrs_, grad_ptrs_;
  std::vector<size_t> counts_;
  std::vector<std::string> names_, grad_names_;
  std::vector<psdp_buffer_desc_t> descs_;  // parameters and gradients
  std::vector<int> layout_;
  float *m_ = nullptr, *v_ = nullptr, *master_ = nullptr, *grad_shard_ = nullptr;  // owned elements
  AdamParams adam_;
  Registration pipelined_, bulk_;  // declared last: deregistered before the buffers go
};

}  // namespace psdp::perf
