// The C boundary for the rooted collectives besides the broadcast: reduce, gather and scatter. The root's
// buffer of nranks blocks is checked on the root only, where it is read or written.
#include "api/guard.h"
#include "api/handle.h"
#include "api/submit.h"
#include "api/validate.h"

using psdp::Status;
using psdp::api::callMemoryKind;
using psdp::api::checkHandle;
using psdp::api::checkRank;
using psdp::api::CollectiveArgs;
using psdp::api::countTimesRanks;
using psdp::api::guarded;
using psdp::api::RequestSlot;
using psdp::api::submit;
using psdp::api::validateCollective;
using psdp::coll::Collectives;

extern "C" {

PSDP_API psdp_status_t psdp_reduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, psdp_op_t op,
                                   int root, psdp_comm_h comm, void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_RETURN_IF_ERROR(checkRank("reduce", "root", root, c.size()));
    size_t recv_count = c.rank() == root ? count : 0;
    CollectiveArgs args{"reduce",
                        sendbuf,
                        recvbuf,
                        count,
                        recv_count,
                        0,
                        /*send_inside_recv=*/true,
                        dtype,
                        true,
                        op,
                        stream,
                        request_p,
                        "sendbuf == recvbuf on the root"};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    return submit(comm, request_p, [&](RequestSlot slot) {
      return c.post("reduce", callMemoryKind(args), slot,
                    [&](Collectives& k) { return k.postReduce(sendbuf, recvbuf, count, dtype, op, root); });
    });
  });
}

PSDP_API psdp_status_t psdp_gather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype, int root,
                                   psdp_comm_h comm, void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_RETURN_IF_ERROR(checkRank("gather", "root", root, c.size()));
    PSDP_ASSIGN_OR_RETURN(size_t total, countTimesRanks("gather", sendcount, c.size()));
    size_t recv_count = c.rank() == root ? total : 0;
    CollectiveArgs args{"gather",
                        sendbuf,
                        recvbuf,
                        sendcount,
                        recv_count,
                        sendcount * static_cast<size_t>(c.rank()),
                        /*send_inside_recv=*/true,
                        dtype,
                        false,
                        PSDP_SUM,
                        stream,
                        request_p,
                        "sendbuf == recvbuf + root * sendcount on the root"};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    return submit(comm, request_p, [&](RequestSlot slot) {
      return c.post("gather", callMemoryKind(args), slot,
                    [&](Collectives& k) { return k.postGather(sendbuf, recvbuf, sendcount, dtype, root); });
    });
  });
}

PSDP_API psdp_status_t psdp_scatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype, int root,
                                    psdp_comm_h comm, void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_RETURN_IF_ERROR(checkRank("scatter", "root", root, c.size()));
    PSDP_ASSIGN_OR_RETURN(size_t total, countTimesRanks("scatter", recvcount, c.size()));
    size_t send_count = c.rank() == root ? total : 0;
    CollectiveArgs args{"scatter",
                        sendbuf,
                        recvbuf,
                        send_count,
                        recvcount,
                        recvcount * static_cast<size_t>(c.rank()),
                        /*send_inside_recv=*/false,
                        dtype,
                        false,
                        PSDP_SUM,
                        stream,
                        request_p,
                        "recvbuf == sendbuf + root * recvcount on the root"};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    return submit(comm, request_p, [&](RequestSlot slot) {
      return c.post("scatter", callMemoryKind(args), slot,
                    [&](Collectives& k) { return k.postScatter(sendbuf, recvbuf, recvcount, dtype, root); });
    });
  });
}

}  // extern "C"
