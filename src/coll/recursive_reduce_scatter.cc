// Recursive-halving reduce-scatter over a power-of-two number of ranks. At step k (distance d = n/2^(k+1))
// a rank holds partial sums of a window of 2d blocks; it keeps the half that contains its own block, sends
// the other half to rank ^ d, and combines what that partner sent for the kept half. After log2(n) steps
// the window is its own block, combined at the last step straight into the output.
//
// Staging: slot 0 holds the partial sums (the kept half after step 0, at most n/2 blocks), slot 1 the
// partner's half, slot 2 this rank's scaled input half at step 0 for premul-sum (its input is only read).
// The half sent and the half combined are disjoint, so a step's combine never touches a buffer its send
// reads; it still waits for the send, since the next step sends from the combined half.
#include <memory>
#include <string>

#include "coll/recursive_collectives.h"
#include "coll/recursive_exchange.h"

namespace psdp::coll {
namespace {

class RecursiveReduceScatter final : public ExchangeSteps {
 public:
  RecursiveReduceScatter(const OpContext& op, const RecursiveReduceScatterArgs& args)
      : ExchangeSteps(op, "recursive-halving reduce-scatter"), args_(args), window_size_(op.nranks) {
    while ((1 << steps_) < op.nranks) ++steps_;
  }

 private:
  Status post() override;
  void finish() override;

  // Distance of the current step's partner, and the first block of the half this rank keeps or sends.
  int distance() const { return window_size_ / 2; }
  bool keepsUpper() const { return (op_.rank & distance()) != 0; }
  int keptLo() const { return keepsUpper() ? window_lo_ + distance() : window_lo_; }
  int sentLo() const { return keepsUpper() ? window_lo_ : window_lo_ + distance(); }
  size_t blockBytes() const { return args_.block_count * args_.elem_size; }
  size_t halfBytes() const { return static_cast<size_t>(distance()) * blockBytes(); }
  // Block b of the current partial sums: the input at step 0, slot 0 (whose first block is work_lo_) later.
  const std::byte* partial(int block) const {
    if (step_ == 0) return args_.input + static_cast<size_t>(block) * blockBytes();
    return op_.staging.slot(0) + static_cast<size_t>(block - work_lo_) * blockBytes();
  }

  const RecursiveReduceScatterArgs& args_;
  int window_lo_ = 0;
  int window_size_;
  int work_lo_ = 0;  // the block at the start of slot 0
};

Status RecursiveReduceScatter::post() {
  const std::byte* send = partial(sentLo());
  // Input that leaves this rank uncombined is scaled first (premul-sum); it is combined nowhere else.
  if (step_ == 0 && args_.kernel.scalesInput()) {
    std::byte* scaled = op_.staging.slot(2);
    args_.kernel.scaleInput(scaled, send, static_cast<size_t>(distance()) * args_.block_count);
    send = scaled;
  }
  int peer = op_.rank ^ distance();
  return exchange_.post(peer, send, halfBytes(), peer, op_.staging.slot(1), halfBytes());
}

void RecursiveReduceScatter::finish() {
  const bool last = step_ + 1 == steps_;
  const std::byte* theirs = op_.staging.slot(1);
  const std::byte* mine = partial(keptLo());
  // Step 0 fills slot 0 with the kept half; later steps combine in place there (dst exactly own).
  if (step_ == 0) work_lo_ = keptLo();
  std::byte* dst = last ? args_.output : op_.staging.slot(0) + static_cast<size_t>(keptLo() - work_lo_) * blockBytes();
  size_t elems = static_cast<size_t>(distance()) * args_.block_count;
  // Step 0 combines this rank's own input, scaled by the kernel for premul-sum; later steps only add.
  const ReduceKernel& kernel = step_ == 0 ? args_.kernel : args_.sum;
  kernel.combine(dst, theirs, mine, elems);
  if (last && kernel.finalize != nullptr) kernel.finalize(dst, elems, op_.nranks);
  window_lo_ = keptLo();
  window_size_ = distance();
}

}  // namespace

PhasePtr startRecursiveReduceScatter(PhaseStorage& storage, const OpContext& op,
                                     const RecursiveReduceScatterArgs& args) {
  return PhasePtr(storage.make<RecursiveReduceScatter>(op, args));
}

}  // namespace psdp::coll
