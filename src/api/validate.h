// Argument checks for the collective calls: everything that can be decided locally, before any rank
// communicates, so that a bad argument gets invalid-argument with the argument's name and the
// communicator stays usable.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>

#include "base/status.h"

namespace psdp::api {

struct CollectiveArgs {
  const char* name;  // "reduce-scatter", ...
  const void* sendbuf;
  const void* recvbuf;
  size_t send_count;      // elements in sendbuf
  size_t recv_count;      // elements in recvbuf
  size_t inplace_offset;  // elements: in-place means sendbuf == recvbuf + offset (or the reverse, see below)
  bool send_inside_recv;  // true: in-place sendbuf lies inside recvbuf; false: recvbuf lies inside sendbuf
  psdp_dtype_t dtype;
  bool reduces;  // whether `op` is used
  psdp_op_t op;
  void* stream;
  psdp_request_h* request_p;  // NULL: blocking
};

Status validateCollective(const CollectiveArgs& args);

// The memory kind of a call's buffers, which picks its collective provider: CUDA memory when a stream is
// given (calls ordered on a CUDA stream), host memory otherwise.
psdp_memory_kind_t callMemoryKind(const CollectiveArgs& args);

// Invalid argument "<name> is NULL" for a NULL output pointer.
Status checkOut(const void* out, const char* name);

// count * nranks, or invalid argument naming the call (`name`) when it overflows.
Result<size_t> countTimesRanks(const char* name, size_t count, int nranks);

}  // namespace psdp::api
