// The collectives of one team, as every provider implements them (coll/provider.h). Callers (core/) have
// validated the arguments: buffers non-null where count > 0, dtype/op supported, in-place aliasing as the
// public header defines it. Blocking calls return by their deadline; posted tasks (CollTask) are driven by
// the caller.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/deadline.h"
#include "base/dtype.h"
#include "base/log.h"
#include "base/status.h"
#include "coll/algorithm_table.h"
#include "coll/custom_ops.h"
#include "coll/progress_loop.h"
#include "transport/transport.h"

namespace psdp::coll {

struct CollParams {
  int rank = 0;
  int nranks = 1;
  size_t fragment_bytes = 1 << 20;  // fragment size of pipelined transfers; at least kMinFragmentBytes
  uint32_t context_id = 0;          // distinguishes communicators that share a transport; low 16 bits kept (tag.h)
  Logger log;                       // null: the process logger
  // Which algorithm each call runs (PSDP_ALGORITHMS, PSDP_ALGORITHM, then the built-in rules), until
  // adoptAlgorithms gives another.
  AlgorithmTable algorithms = AlgorithmTable();
  // The largest fragment and depth a table adopted later may ask for: staging and completions are made for
  // the larger of these and what `algorithms` asks for.
  size_t reserved_fragment_bytes = 0;
  int reserved_depth = 0;
  // PSDP_DETERMINISTIC: every collective uses the ring, whose result does not depend on fragment_bytes or the
  // algorithm table.
  bool deterministic = false;
  // PSDP_CHECK: every operation agrees its header across ranks (coll/op_header_check.h); false: only barriers
  // run the agreement, which is all they do.
  bool check_calls = true;
  // Every rank runs on one host (core's placements): operations whose rule says direct first find out whether
  // they can run direct (coll/direct_phase.h).
  bool single_host = false;
  // Tasks of this Collectives alive at once (posted, not yet destroyed) that get memory made at creation;
  // more than that allocate when they are made (core's engine bounds the tasks it queues, PSDP_MAX_IN_FLIGHT).
  size_t max_tasks = 64;
};

// Operations of one Collectives that may run at once: each holds a task slot from start() to its destruction.
inline constexpr int kMaxTasksInFlight = 8;

// One posted collective. It holds its arguments, tag and sequence number from the moment it is posted; it
// touches staging, its slot's completions and the caller's buffers only from start() until advance()
// reports kDone or an error. Tasks start in posting order, each once canStart() says its task slot is free,
// and then run at once and complete in any order. Not thread-safe, nor are the tasks of one Collectives with
// each other: the caller serialises start/advance of all of them. Destroying a task gives its slot and
// staging back. REQUIRES: the Collectives that made it outlives it.
class CollTask {
 public:
  virtual ~CollTask() = default;
  // "all-reduce #12 (count 1000, float32)": kind, sequence number, count.
  virtual std::string describe() const = 0;
  // The team's sequence number of a collective; none for point-to-point transfers, which have their own.
  virtual std::optional<uint32_t> seq() const = 0;
  // Whether start() may be called now. REQUIRES: every task posted before this one has started.
  virtual bool canStart() const = 0;
  // Claims staging and completions; operations that need no peer (count 0, one rank) complete here.
  virtual void start(const Deadline& deadline) = 0;
  const Deadline& deadline() const { return deadline_; }
  // Never blocks. Errors: remote error; the Collectives is then failed (see below).
  virtual Result<Progress> advance() = 0;
  // The peers and operations it is blocked on, for the timeout message.
  virtual std::string waitingFor() const = 0;
  // Records that the task gave up (timeout decided by the caller): the Collectives is then failed.
  virtual void abandon(const Status& status) = 0;

 protected:
  Deadline deadline_ = Deadline::never();
};

// Below this a fragment could not hold one element of every dtype with room to spare.
inline constexpr size_t kMinFragmentBytes = 64;

// True for the (dtype, op) pairs the reduction kernels implement.
bool isReductionSupported(psdp_dtype_t dtype, psdp_op_t op);
using psdp::dtypeName;
using psdp::dtypeSize;
const char* opName(psdp_op_t op);

// The collectives of one communicator, made by a provider (coll/provider.h): owns what its operations run in
// (the host provider: staging memory allocated and touched once, at creation, and the completions of
// in-flight transfers) and the operation sequence number that keeps the tags of consecutive operations apart. One
// thread at a time posts; one thread at a time (possibly another one, core's progress engine) drives the tasks. Only
// the failure state is shared between the two, under a lock.
//
// Failure: after any error (remote error, timeout) the object is failed and every later call returns that
// first error. The failed operation may leave sends and receives posted; they reference this object's
// staging and completions, which stay valid as long as it lives, and the caller's buffers. REQUIRES: after
// an error, close the transport (which completes or cancels what is posted) before freeing those buffers
// or destroying this object.
class Collectives {
 public:
  virtual ~Collectives() = default;

  // Nonblocking posts: check what can be checked locally (unsupported dtype/op, an earlier failure) and take
  // the next sequence number; nothing moves until the task is started. Buffer contracts as below.
  virtual Result<std::unique_ptr<CollTask>> postReduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                                              psdp_dtype_t dtype, psdp_op_t op) = 0;
  virtual Result<std::unique_ptr<CollTask>> postAllGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                                                          psdp_dtype_t dtype) = 0;
  virtual Result<std::unique_ptr<CollTask>> postAllReduce(const void* sendbuf, void* recvbuf, size_t count,
                                                          psdp_dtype_t dtype, psdp_op_t op) = 0;
  // recvbuf: count elements on every rank; sendbuf: count elements, read on the root only. In place:
  // sendbuf == recvbuf. Errors: invalid argument (root outside [0, nranks)).
  virtual Result<std::unique_ptr<CollTask>> postBroadcast(const void* sendbuf, void* recvbuf, size_t count,
                                                          psdp_dtype_t dtype, int root) = 0;
  virtual Result<std::unique_ptr<CollTask>> postBarrier() = 0;
  // recvbuf: count elements, written on the root only (ignored elsewhere); sendbuf: count elements. In place:
  // sendbuf == recvbuf on the root.
  virtual Result<std::unique_ptr<CollTask>> postReduce(const void* sendbuf, void* recvbuf, size_t count,
                                                       psdp_dtype_t dtype, psdp_op_t op, int root) = 0;
  // sendbuf: sendcount elements; recvbuf: nranks*sendcount on the root only. In place (root): sendbuf ==
  // recvbuf + root*sendcount.
  virtual Result<std::unique_ptr<CollTask>> postGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                                                       psdp_dtype_t dtype, int root) = 0;
  // sendbuf: nranks*recvcount elements on the root only; recvbuf: recvcount. In place (root): recvbuf ==
  // sendbuf + root*recvcount.
  virtual Result<std::unique_ptr<CollTask>> postScatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                                        psdp_dtype_t dtype, int root) = 0;
  // sendbuf, recvbuf: nranks*count elements, not overlapping.
  virtual Result<std::unique_ptr<CollTask>> postAllToAll(const void* sendbuf, void* recvbuf, size_t count,
                                                         psdp_dtype_t dtype) = 0;
  // counts: nranks entries, read during the call only. recvbuf: their sum, rank r's block at the sum of the
  // counts before r; sendbuf: counts[rank]. In place: sendbuf == recvbuf + that offset for this rank.
  virtual Result<std::unique_ptr<CollTask>> postAllGatherV(const void* sendbuf, void* recvbuf, const size_t* counts,
                                                           psdp_dtype_t dtype) = 0;
  // counts as above. sendbuf: their sum; recvbuf: counts[rank], the reduction of this rank's block. In place:
  // recvbuf == sendbuf + this rank's offset.
  virtual Result<std::unique_ptr<CollTask>> postReduceScatterV(const void* sendbuf, void* recvbuf, const size_t* counts,
                                                               psdp_dtype_t dtype, psdp_op_t op) = 0;
  // One message to or from `peer` (coll/point_to_point.h). Errors: invalid argument (peer outside the team).
  virtual Result<std::unique_ptr<CollTask>> postSend(const void* sendbuf, size_t count, psdp_dtype_t dtype,
                                                     int peer) = 0;
  virtual Result<std::unique_ptr<CollTask>> postRecv(void* recvbuf, size_t count, psdp_dtype_t dtype, int peer) = 0;

  // Blocking forms: post, then drive the task in this thread until done or the deadline.

  // sendbuf: nranks*recvcount elements; recvbuf: recvcount. In place: recvbuf == sendbuf + rank*recvcount.
  // Integer sums are exact (wrapping on overflow); float sums depend on the ring order.
  Status reduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype, psdp_op_t op,
                       const Deadline& deadline) {
    return run(postReduceScatter(sendbuf, recvbuf, recvcount, dtype, op), deadline);
  }
  // sendbuf: sendcount elements; recvbuf: nranks*sendcount. In place: sendbuf == recvbuf + rank*sendcount.
  Status allGather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype, const Deadline& deadline) {
    return run(postAllGather(sendbuf, recvbuf, sendcount, dtype), deadline);
  }
  // sendbuf, recvbuf: count elements; count need not divide by nranks. In place: sendbuf == recvbuf.
  Status allReduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, psdp_op_t op,
                   const Deadline& deadline) {
    return run(postAllReduce(sendbuf, recvbuf, count, dtype, op), deadline);
  }
  // Returns when every rank has entered it.
  Status broadcast(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, int root,
                   const Deadline& deadline) {
    return run(postBroadcast(sendbuf, recvbuf, count, dtype, root), deadline);
  }
  Status barrier(const Deadline& deadline) { return run(postBarrier(), deadline); }

  // Starts `task` and drives it (transport waits included) until done, an error or the deadline (timeout,
  // naming the operation and the peers it waited for).
  Status run(Result<std::unique_ptr<CollTask>> task, const Deadline& deadline);

  // Replaces the algorithm table (the rules a tuning file holds for the team's interconnect, chosen once
  // the team is connected). Every rank of the team must adopt the same table between the same two calls.
  // REQUIRES: no task of this Collectives is alive. Errors: invalid argument where a rule asks for more
  // fragment bytes or depth than the staging was made for (CollParams::reserved_*).
  virtual Status adoptAlgorithms(const AlgorithmTable& table) = 0;

  // The fragment of the ring and chain transfers of calls posted from now on: `bytes` in place of the rules'
  // and the communicator's (the chunk engine's fragment setting); 0 gives theirs back. Which algorithm runs
  // does not change. Every rank of the team must set the same between the same two posts. Errors: invalid
  // argument where `bytes` is below kMinFragmentBytes or above stagedFragmentBytes().
  virtual Status overrideFragmentBytes(size_t bytes) = 0;
  // The largest fragment the staging holds (CollParams: fragment_bytes, the rules', reserved_fragment_bytes).
  virtual size_t stagedFragmentBytes() const = 0;
  // The largest block (one rank's share of the buffer) that a ring or chain stage moved since the last call,
  // which clears it; 0 where every call ran direct, recursive or alone. A fragment at least that large moves
  // each block whole, so fragments from that size up cannot change those calls. Any thread.
  virtual size_t takeLargestRingBlock() = 0;

  // The premul-sum ops the reductions accept as `op` besides the built-in ones; a post resolves its op
  // here (invalid argument, object still usable, for an op unknown to it or used with another dtype).
  CustomOps& customOps() { return custom_ops_; }

 protected:
  explicit Collectives(transport::Transport& transport) : transport_(transport) {}
  transport::Transport& transport_;
  CustomOps custom_ops_;
};

}  // namespace psdp::coll
