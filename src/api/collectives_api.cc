// The C boundary for collectives: argument checks, then the communicator.
#include "api/guard.h"
#include "api/handle.h"
#include "api/submit.h"
#include "api/validate.h"

using psdp::Status;
using psdp::api::callMemoryKind;
using psdp::api::checkHandle;
using psdp::api::CollectiveArgs;
using psdp::api::countTimesRanks;
using psdp::api::guarded;
using psdp::api::RequestSlot;
using psdp::api::submit;
using psdp::api::validateCollective;

extern "C" {

PSDP_API psdp_status_t psdp_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype,
                                           psdp_op_t op, psdp_comm_h comm, void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_ASSIGN_OR_RETURN(size_t total, countTimesRanks("reduce-scatter", recvcount, c.size()));
    CollectiveArgs args{"reduce-scatter",           sendbuf, recvbuf,          total, recvcount, recvcount * c.rank(),
                        /*send_inside_recv=*/false, dtype,   /*reduces=*/true, op,    stream,    request_p};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    return submit(comm, request_p, [&](RequestSlot slot) {
      return c.reduceScatter(sendbuf, recvbuf, recvcount, dtype, op, slot, callMemoryKind(args));
    });
  });
}

PSDP_API psdp_status_t psdp_all_gather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype,
                                       psdp_comm_h comm, void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_ASSIGN_OR_RETURN(size_t total, countTimesRanks("all-gather", sendcount, c.size()));
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
    return submit(comm, request_p, [&](RequestSlot slot) {
      return c.allGather(sendbuf, recvbuf, sendcount, dtype, slot, callMemoryKind(args));
    });
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
    return submit(comm, request_p, [&](RequestSlot slot) {
      return c.allReduce(sendbuf, recvbuf, count, dtype, op, slot, callMemoryKind(args));
    });
  });
}

PSDP_API psdp_status_t psdp_broadcast(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, int root,
                                      psdp_comm_h comm, void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    if (root < 0 || root >= c.size()) {
      return Status::invalidArgument("broadcast: root {} is outside [0, {})", root, c.size());
    }
    // Only the root reads sendbuf, so only there is it checked (and may alias recvbuf, in place).
    size_t send_count = c.rank() == root ? count : 0;
    CollectiveArgs args{"broadcast", sendbuf, recvbuf,  send_count, count,    0, /*send_inside_recv=*/true,
                        dtype,       false,   PSDP_SUM, stream,     request_p};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    return submit(comm, request_p, [&](RequestSlot slot) {
      return c.broadcast(sendbuf, recvbuf, count, dtype, root, slot, callMemoryKind(args));
    });
  });
}

PSDP_API psdp_status_t psdp_barrier(psdp_comm_h comm, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    return submit(comm, request_p, [&](RequestSlot slot) { return c.barrier(slot); });
  });
}

}  // extern "C"
