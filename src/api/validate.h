// Argument checks for the collective calls: everything that can be decided locally, before any rank
// communicates, so that a bad argument gets invalid-argument with the argument's name and the
// communicator stays usable.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <string>

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
  // How the call defines in place, for the overlap error; null: "sendbuf == recvbuf + rank * count" (or the
  // reverse, as send_inside_recv says).
  const char* inplace_rule = nullptr;
};

Status validateCollective(const CollectiveArgs& args);

// The memory kind of a call's buffers, which picks its collective provider: CUDA memory when a stream is
// given (calls ordered on a CUDA stream), host memory otherwise.
psdp_memory_kind_t callMemoryKind(const CollectiveArgs& args);

// Invalid argument "<name> is NULL" for a NULL output pointer.
Status checkOut(const void* out, const char* name);

// The calls that return text (psdp_algorithm_table's convention): invalid argument for a NULL len, or a
// NULL buf with a nonzero *len.
Status checkTextOut(const char* buf, const size_t* len);
// At most *len bytes of `text`, NUL included, into buf; *len becomes what the whole text needs.
void copyTextOut(const std::string& text, char* buf, size_t* len);

// count * nranks, or invalid argument naming the call (`name`) when it overflows.
Result<size_t> countTimesRanks(const char* name, size_t count, int nranks);

// The per-rank counts of a -v call (`what` names the argument): their sum, and the sum of those before
// `rank`. Errors: invalid argument when counts is NULL or the sum overflows (naming the rank).
struct CountsTotal {
  size_t total = 0;
  size_t before_rank = 0;
};
Result<CountsTotal> sumCounts(const char* name, const char* what, const size_t* counts, int nranks, int rank);

// Invalid argument unless 0 <= value < nranks: "<call>: <what> 5 is outside [0, 4)".
Status checkRank(const char* call, const char* what, int value, int nranks);

}  // namespace psdp::api
