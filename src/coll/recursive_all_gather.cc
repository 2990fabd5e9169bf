// Recursive-doubling all-gather over a power-of-two number of ranks. Before step k a rank holds the 2^k
// blocks of its aligned group [rank & ~(2^k - 1), +2^k); it sends them to rank ^ 2^k and receives that
// partner's group, adjacent to its own, straight into the output. The groups are contiguous in the output,
// so every step is one message each way and no staging is involved.
#include <cstring>
#include <memory>
#include <string>

#include "coll/recursive_collectives.h"
#include "coll/recursive_exchange.h"

namespace psdp::coll {
namespace {

class RecursiveAllGather final : public ExchangeSteps {
 public:
  RecursiveAllGather(const OpContext& op, const RecursiveAllGatherArgs& args)
      : ExchangeSteps(op, "recursive-doubling all-gather"), args_(args) {
    while ((1 << steps_) < op.nranks) ++steps_;
  }

 private:
  Status post() override;
  std::byte* group(int rank) const {
    int first = rank & ~((1 << step_) - 1);
    return args_.output + static_cast<size_t>(first) * args_.block_count * args_.elem_size;
  }

  const RecursiveAllGatherArgs& args_;
};

Status RecursiveAllGather::post() {
  int peer = op_.rank ^ (1 << step_);
  size_t bytes = (size_t{1} << step_) * args_.block_count * args_.elem_size;
  return exchange_.post(peer, group(op_.rank), bytes, peer, group(peer), bytes);
}

}  // namespace

PhasePtr startRecursiveAllGather(PhaseStorage& storage, const OpContext& op, const RecursiveAllGatherArgs& args) {
  size_t block_bytes = args.block_count * args.elem_size;
  std::byte* own_block = args.output + static_cast<size_t>(op.rank) * block_bytes;
  if (args.own != own_block) std::memcpy(own_block, args.own, block_bytes);
  return PhasePtr(storage.make<RecursiveAllGather>(op, args));
}

}  // namespace psdp::coll
