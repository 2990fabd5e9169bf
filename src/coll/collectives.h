// Collective algorithms over the transport's point-to-point interface. Callers (core/) have validated the
// arguments: buffers non-null where count > 0, dtype/op supported, in-place aliasing as the public header
// defines it. Every call is blocking and returns by its deadline.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/deadline.h"
#include "base/log.h"
#include "base/status.h"
#include "transport/transport.h"

namespace psdp::coll {

struct CollParams {
  int rank = 0;
  int nranks = 1;
  size_t chunk_bytes = 1 << 20;  // fragment size of pipelined transfers; at least kMinChunkBytes
  uint32_t context_id = 0;       // distinguishes communicators that share a transport; low 16 bits kept (tag.h)
  Logger log;                    // null: the process logger
};

// Below this a fragment could not hold one element of every dtype with room to spare.
inline constexpr size_t kMinChunkBytes = 64;

// True for the (dtype, op) pairs the reduction kernels implement.
bool isReductionSupported(psdp_dtype_t dtype, psdp_op_t op);
size_t dtypeSize(psdp_dtype_t dtype);  // 0 for an unknown dtype
const char* dtypeName(psdp_dtype_t dtype);
const char* opName(psdp_op_t op);

// The collectives of one communicator: owns the staging memory (allocated and touched once, at creation),
// the completions of in-flight transfers, and the operation sequence number that keeps the tags of
// consecutive operations apart. Not thread-safe: one operation at a time.
//
// Failure: after any error (remote error, timeout) the object is failed and every later call returns that
// first error. The failed operation may leave sends and receives posted; they reference this object's
// staging and completions, which stay valid as long as it lives, and the caller's buffers. REQUIRES: after
// an error, close the transport (which completes or cancels what is posted) before freeing those buffers
// or destroying this object.
class Collectives {
 public:
  // Errors: invalid argument (rank outside [0, nranks), chunk_bytes below kMinChunkBytes), system (the
  // staging memory, 8 * chunk_bytes, cannot be allocated).
  static Result<std::unique_ptr<Collectives>> create(transport::Transport& transport, const CollParams& params);
  virtual ~Collectives() = default;

  // sendbuf: nranks*recvcount elements; recvbuf: recvcount. In place: recvbuf == sendbuf + rank*recvcount.
  // Integer sums are exact (wrapping on overflow); float sums depend on the ring order.
  virtual Status reduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype, psdp_op_t op,
                               const Deadline& deadline) = 0;
  // sendbuf: sendcount elements; recvbuf: nranks*sendcount. In place: sendbuf == recvbuf + rank*sendcount.
  virtual Status allGather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype,
                           const Deadline& deadline) = 0;
  // sendbuf, recvbuf: count elements; count need not divide by nranks. In place: sendbuf == recvbuf.
  virtual Status allReduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, psdp_op_t op,
                           const Deadline& deadline) = 0;
  // Returns when every rank has entered it.
  virtual Status barrier(const Deadline& deadline) = 0;
};

}  // namespace psdp::coll
