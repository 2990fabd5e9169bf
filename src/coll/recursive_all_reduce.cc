// Recursive-doubling all-reduce. Steps of this rank, in order:
//   fold in    (first 2r ranks) even rank: send its vector to rank+1; odd rank: receive it and combine.
//   doubling   (group members) for k = 0..log2(p)-1: exchange the whole vector with group member
//              vrank ^ 2^k and combine.
//   fold out   odd rank: send the result to rank-1; even rank: receive it straight into its output.
// The working vector is the output itself; the partner's vector arrives in staging slot 0. A step's
// combine waits for its send too, since the send reads the vector the combine overwrites.
#include <cstring>
#include <memory>
#include <string>

#include "coll/recursive_collectives.h"
#include "coll/recursive_exchange.h"

namespace psdp::coll {
namespace {

struct Step {
  int send_peer = -1;
  int recv_peer = -1;
  bool combine = false;      // combine the received vector into the output
  bool theirs_low = false;   // the partner's vector is the `partial` (lower group number) operand
  bool into_output = false;  // receive straight into the output (fold out of a rank that sat out)
  bool finalize = false;     // the last combine: apply the kernel's finalize (avg) once, after it
};

// Fold in and out plus one step per doubling round of at most 2^31 ranks.
constexpr int kMaxSteps = 34;

class RecursiveAllReduce final : public ExchangeSteps {
 public:
  RecursiveAllReduce(const OpContext& op, const RecursiveAllReduceArgs& args)
      : ExchangeSteps(op, "recursive-doubling all-reduce"), args_(args) {
    plan(RecursiveGroup(op.rank, op.nranks));
  }

 private:
  void plan(const RecursiveGroup& group);
  void add(const Step& step) { plan_[steps_++] = step; }
  Status post() override;
  void finish() override;
  size_t bytes() const { return args_.count * args_.elem_size; }

  const RecursiveAllReduceArgs& args_;
  Step plan_[kMaxSteps];
};

void RecursiveAllReduce::plan(const RecursiveGroup& group) {
  const int rank = op_.rank;
  if (group.sitsOut()) {
    add(Step{.send_peer = rank + 1});
    add(Step{.recv_peer = rank + 1, .into_output = true});
    return;
  }
  // The folded-in vector belongs to the even rank, lower than this one.
  if (rank < 2 * group.extra) add(Step{.recv_peer = rank - 1, .combine = true, .theirs_low = true});
  for (int k = 0; k < group.steps; ++k) {
    int partner_v = group.vrank ^ (1 << k);
    int peer = group.realRank(partner_v);
    add(Step{.send_peer = peer, .recv_peer = peer, .combine = true, .theirs_low = partner_v < group.vrank});
  }
  plan_[steps_ - 1].finalize = true;
  if (rank < 2 * group.extra) add(Step{.send_peer = rank - 1});
}

Status RecursiveAllReduce::post() {
  const Step& step = plan_[step_];
  std::byte* recv = step.into_output ? args_.output : op_.staging.slot(0);
  return exchange_.post(step.send_peer, args_.output, bytes(), step.recv_peer, recv, bytes());
}

void RecursiveAllReduce::finish() {
  const Step& step = plan_[step_];
  if (step.combine) {
    const std::byte* theirs = op_.staging.slot(0);
    std::byte* mine = args_.output;
    // Both partners pass the same vectors in the same operand order, so they compute the same bits.
    if (step.theirs_low) {
      args_.kernel.combine(mine, theirs, mine, args_.count);
    } else {
      args_.kernel.combine(mine, mine, theirs, args_.count);
    }
  }
  if (step.finalize && args_.kernel.finalize != nullptr) args_.kernel.finalize(args_.output, args_.count, op_.nranks);
}

}  // namespace

PhasePtr startRecursiveAllReduce(PhaseStorage& storage, const OpContext& op, const RecursiveAllReduceArgs& args) {
  // The working vector starts as this rank's input, scaled once for premul-sum: later combines only add.
  if (args.prescale.scalesInput()) {
    args.prescale.scaleInput(args.output, args.input, args.count);
  } else if (args.output != args.input) {
    std::memcpy(args.output, args.input, args.count * args.elem_size);
  }
  return PhasePtr(storage.make<RecursiveAllReduce>(op, args));
}

}  // namespace psdp::coll
