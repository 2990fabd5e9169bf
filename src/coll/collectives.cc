// The ring implementation of Collectives: the trivial cases (empty buffers, a single rank) are settled
// here; everything else is one ring pass (reduce-scatter, all-gather) or two (all-reduce).
#include "coll/collectives.h"

#include <algorithm>
#include <cstring>

#include "coll/barrier.h"
#include "coll/op_context.h"
#include "coll/reduce_kernels.h"
#include "coll/ring_all_gather.h"
#include "coll/ring_reduce_scatter.h"
#include "coll/staging_pool.h"
#include "coll/tag.h"

namespace psdp::coll {
namespace {

// Fragments in flight per direction, and fragments of a block per ring round: enough to keep a link busy
// while a fragment is being reduced. The staging memory is 2 * kDepth * chunk_bytes (receive and send
// slots, see ring_reduce_scatter.cc).
constexpr int kDepth = 4;

void copyIfDistinct(std::byte* dst, const std::byte* src, size_t bytes) {
  if (dst != src && bytes > 0) std::memcpy(dst, src, bytes);
}

class RingCollectives final : public Collectives {
 public:
  RingCollectives(transport::Transport& transport, const CollParams& params, StagingPool staging)
      : transport_(transport), params_(params), staging_(std::move(staging)) {}

  Status reduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype, psdp_op_t op,
                       const Deadline& deadline) override;
  Status allGather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype,
                   const Deadline& deadline) override;
  Status allReduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, psdp_op_t op,
                   const Deadline& deadline) override;
  Status barrier(const Deadline& deadline) override;

 private:
  Status checkUsable() const;
  OpContext beginOp(const char* kind, size_t count, psdp_dtype_t dtype, const Deadline& deadline);
  void logRing(const OpContext& op, size_t esize) const;
  Status finish(const OpContext& op, Status status);
  size_t fragElems(size_t esize) const { return std::max<size_t>(1, params_.chunk_bytes / esize); }
  spdlog::logger& log() const { return params_.log ? *params_.log : processLog(); }

  transport::Transport& transport_;
  CollParams params_;
  StagingPool staging_;
  CompletionRing sends_{kDepth};
  CompletionRing recvs_{kDepth};
  uint32_t seq_ = 0;
  Status failed_;
};

Status RingCollectives::reduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype,
                                      psdp_op_t op_kind, const Deadline& deadline) {
  PSDP_RETURN_IF_ERROR(checkUsable());
  ReduceKernel kernel = findReduceKernel(dtype, op_kind);
  if (!kernel.isValid()) return Status::unsupported("reduce-scatter of {} with {}", dtypeName(dtype), opName(op_kind));
  OpContext op = beginOp("reduce-scatter", recvcount, dtype, deadline);
  const size_t esize = dtypeSize(dtype);
  const auto* input = static_cast<const std::byte*>(sendbuf);
  auto* output = static_cast<std::byte*>(recvbuf);
  if (recvcount == 0) return Status::ok();
  if (params_.nranks == 1) {
    copyIfDistinct(output, input, recvcount * esize);
    if (kernel.finalize != nullptr) kernel.finalize(output, recvcount, 1);
    return Status::ok();
  }
  logRing(op, esize);
  BlockLayout layout(recvcount * static_cast<size_t>(params_.nranks), params_.nranks);
  RingReduceScatterArgs args{input, output, layout, esize, fragElems(esize), kernel};
  return finish(op, ringReduceScatter(op, args));
}

Status RingCollectives::allGather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype,
                                  const Deadline& deadline) {
  PSDP_RETURN_IF_ERROR(checkUsable());
  if (dtypeSize(dtype) == 0) return Status::unsupported("all-gather of dtype {}", static_cast<int>(dtype));
  OpContext op = beginOp("all-gather", sendcount, dtype, deadline);
  const size_t esize = dtypeSize(dtype);
  const auto* input = static_cast<const std::byte*>(sendbuf);
  auto* output = static_cast<std::byte*>(recvbuf);
  if (sendcount == 0) return Status::ok();
  if (params_.nranks == 1) {
    copyIfDistinct(output, input, sendcount * esize);
    return Status::ok();
  }
  logRing(op, esize);
  BlockLayout layout(sendcount * static_cast<size_t>(params_.nranks), params_.nranks);
  RingAllGatherArgs args{input, output, layout, esize, fragElems(esize)};
  return finish(op, ringAllGather(op, args));
}

// Reduce-scatter over nearly equal blocks leaves this rank's block of the sum in recvbuf; all-gather then
// spreads every block from there. In place, the input blocks are only read (partial sums live in staging).
Status RingCollectives::allReduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype,
                                  psdp_op_t op_kind, const Deadline& deadline) {
  PSDP_RETURN_IF_ERROR(checkUsable());
  ReduceKernel kernel = findReduceKernel(dtype, op_kind);
  if (!kernel.isValid()) return Status::unsupported("all-reduce of {} with {}", dtypeName(dtype), opName(op_kind));
  OpContext op = beginOp("all-reduce", count, dtype, deadline);
  const size_t esize = dtypeSize(dtype);
  const auto* input = static_cast<const std::byte*>(sendbuf);
  auto* output = static_cast<std::byte*>(recvbuf);
  if (count == 0) return Status::ok();
  if (params_.nranks == 1) {
    copyIfDistinct(output, input, count * esize);
    if (kernel.finalize != nullptr) kernel.finalize(output, count, 1);
    return Status::ok();
  }
  logRing(op, esize);
  BlockLayout layout(count, params_.nranks);
  std::byte* own_block = output + layout.offset(params_.rank) * esize;
  RingReduceScatterArgs reduce{input, own_block, layout, esize, fragElems(esize), kernel};
  PSDP_RETURN_IF_ERROR(finish(op, ringReduceScatter(op, reduce)));
  RingAllGatherArgs gather{own_block, output, layout, esize, fragElems(esize)};
  return finish(op, ringAllGather(op, gather));
}

Status RingCollectives::barrier(const Deadline& deadline) {
  PSDP_RETURN_IF_ERROR(checkUsable());
  OpContext op = beginOp("barrier", 0, PSDP_UINT8, deadline);
  op.has_data = false;
  if (params_.nranks == 1) return Status::ok();
  log().debug("{}: dissemination over {} ranks", op.describe(), params_.nranks);
  return finish(op, disseminationBarrier(op));
}

// A failed operation may have left transfers posted on the shared completions and tag space; running
// another one on top could match its messages or reset its completions under the transport.
Status RingCollectives::checkUsable() const {
  if (failed_.isOk()) return Status::ok();
  return Status::make(failed_.code(), "collectives unusable after an earlier failure: {}", failed_.message());
}

OpContext RingCollectives::beginOp(const char* kind, size_t count, psdp_dtype_t dtype, const Deadline& deadline) {
  OpContext op;
  op.transport = &transport_;
  op.rank = params_.rank;
  op.nranks = params_.nranks;
  op.seq = seq_++;
  op.tag = makeTag(params_.context_id, op.seq);
  op.deadline = deadline;
  op.sends = &sends_;
  op.recvs = &recvs_;
  op.staging = &staging_;
  op.kind = kind;
  op.count = count;
  op.dtype = dtype;
  return op;
}

void RingCollectives::logRing(const OpContext& op, size_t esize) const {
  log().debug("{}: ring over {} ranks, fragments of {} elements, {} in flight per direction", op.describe(),
              params_.nranks, fragElems(esize), kDepth);
}

Status RingCollectives::finish(const OpContext& op, Status status) {
  if (!status.isOk() && failed_.isOk()) {
    failed_ = status;
    log().warn("{} failed, collectives of this communicator are now unusable: {}", op.describe(), status.toString());
  }
  return status;
}

}  // namespace

Result<std::unique_ptr<Collectives>> Collectives::create(transport::Transport& transport, const CollParams& params) {
  if (params.nranks < 1 || params.rank < 0 || params.rank >= params.nranks) {
    return Status::invalidArgument("rank {} of {} ranks", params.rank, params.nranks);
  }
  if (params.chunk_bytes < kMinChunkBytes) {
    return Status::invalidArgument("chunk of {} bytes, below the minimum of {}", params.chunk_bytes, kMinChunkBytes);
  }
  PSDP_ASSIGN_OR_RETURN(StagingPool staging, StagingPool::create(params.chunk_bytes, 2 * kDepth));
  return std::unique_ptr<Collectives>(std::make_unique<RingCollectives>(transport, params, std::move(staging)));
}

}  // namespace psdp::coll
