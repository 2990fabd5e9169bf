// The C boundary for collectives: argument checks, then the communicator.
#include "api/guard.h"
#include "api/handle.h"
#include "api/validate.h"

using psdp::Status;
using psdp::api::checkHandle;
using psdp::api::CollectiveArgs;
using psdp::api::guarded;
using psdp::api::validateCollective;

namespace {

// nranks * count, or an error naming the argument when it overflows.
psdp::Result<size_t> timesRanks(const char* name, size_t count, int nranks) {
  if (count > SIZE_MAX / static_cast<size_t>(nranks)) {
    return Status::invalidArgument("{}: count {} times {} ranks overflows", name, count, nranks);
  }
  return count * static_cast<size_t>(nranks);
}

}  // namespace

extern "C" {

PSDP_API psdp_status_t psdp_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype,
                                           psdp_op_t op, psdp_comm_h comm, void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_ASSIGN_OR_RETURN(size_t total, timesRanks("reduce-scatter", recvcount, c.size()));
    CollectiveArgs args{"reduce-scatter",           sendbuf, recvbuf,          total, recvcount, recvcount * c.rank(),
                        /*send_inside_recv=*/false, dtype,   /*reduces=*/true, op,    stream,    request_p};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    return c.reduceScatter(sendbuf, recvbuf, recvcount, dtype, op);
  });
}

PSDP_API psdp_status_t psdp_all_gather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype,
                                       psdp_comm_h comm, void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_ASSIGN_OR_RETURN(size_t total, timesRanks("all-gather", sendcount, c.size()));
    CollectiveArgs args{"all-gather",
                        sendbuf,
                        recvbuf,
                        sendcount,
                        total,
                        sendcount * c.rank(),
                        /*send_inside_recv=*/true,
                        dtype,
                        /*reduces=*/false,
                        PSDP_SUM,
                        stream,
                        request_p};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    return c.allGather(sendbuf, recvbuf, sendcount, dtype);
  });
}

PSDP_API psdp_status_t psdp_all_reduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype,
                                       psdp_op_t op, psdp_comm_h comm, void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    CollectiveArgs args{"all-reduce",
                        sendbuf,
                        recvbuf,
                        count,
                        count,
                        0,
                        /*send_inside_recv=*/true,
                        dtype,
                        /*reduces=*/true,
                        op,
                        stream,
                        request_p};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    return c.allReduce(sendbuf, recvbuf, count, dtype, op);
  });
}

}  // extern "C"
