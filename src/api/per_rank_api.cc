// The C boundary for the collectives whose blocks differ per rank: all-to-all (one block per destination)
// and the all-gather and reduce-scatter with per-rank counts.
#include "api/guard.h"
#include "api/handle.h"
#include "api/submit.h"
#include "api/validate.h"

using psdp::Status;
using psdp::api::callMemoryKind;
using psdp::api::checkHandle;
using psdp::api::CollectiveArgs;
using psdp::api::CountsTotal;
using psdp::api::countTimesRanks;
using psdp::api::guarded;
using psdp::api::RequestSlot;
using psdp::api::submit;
using psdp::api::sumCounts;
using psdp::api::validateCollective;
using psdp::coll::Collectives;

extern "C" {

PSDP_API psdp_status_t psdp_all_to_all(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype,
                                       psdp_comm_h comm, void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_ASSIGN_OR_RETURN(size_t total, countTimesRanks("all-to-all", count, c.size()));
    // An in-place offset of `total` never makes overlapping buffers count as in place: all-to-all has none.
    CollectiveArgs args{"all-to-all",
                        sendbuf,
                        recvbuf,
                        total,
                        total,
                        total,
                        /*send_inside_recv=*/true,
                        dtype,
                        false,
                        PSDP_SUM,
                        stream,
                        request_p,
                        "nothing: the buffers must not overlap"};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    return submit(comm, request_p, [&](RequestSlot slot) {
      return c.post("all-to-all", callMemoryKind(args), slot,
                    [&](Collectives& k) { return k.postAllToAll(sendbuf, recvbuf, count, dtype); });
    });
  });
}

PSDP_API psdp_status_t psdp_all_gather_v(const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                         psdp_dtype_t dtype, psdp_comm_h comm, void* stream,
                                         psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_ASSIGN_OR_RETURN(CountsTotal sum, sumCounts("all-gather-v", "recvcounts", recvcounts, c.size(), c.rank()));
    CollectiveArgs args{"all-gather-v",
                        sendbuf,
                        recvbuf,
                        recvcounts[c.rank()],
                        sum.total,
                        sum.before_rank,
                        /*send_inside_recv=*/true,
                        dtype,
                        false,
                        PSDP_SUM,
                        stream,
                        request_p,
                        "sendbuf == recvbuf + the sum of recvcounts before this rank"};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    return submit(comm, request_p, [&](RequestSlot slot) {
      return c.post("all-gather-v", callMemoryKind(args), slot,
                    [&](Collectives& k) { return k.postAllGatherV(sendbuf, recvbuf, recvcounts, dtype); });
    });
  });
}

PSDP_API psdp_status_t psdp_reduce_scatter_v(const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                             psdp_dtype_t dtype, psdp_op_t op, psdp_comm_h comm, void* stream,
                                             psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_ASSIGN_OR_RETURN(CountsTotal sum, sumCounts("reduce-scatter-v", "recvcounts", recvcounts, c.size(), c.rank()));
    CollectiveArgs args{"reduce-scatter-v",
                        sendbuf,
                        recvbuf,
                        sum.total,
                        recvcounts[c.rank()],
                        sum.before_rank,
                        /*send_inside_recv=*/false,
                        dtype,
                        /*reduces=*/true,
                        op,
                        stream,
                        request_p,
                        "recvbuf == sendbuf + the sum of recvcounts before this rank"};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    return submit(comm, request_p, [&](RequestSlot slot) {
      return c.post("reduce-scatter-v", callMemoryKind(args), slot,
                    [&](Collectives& k) { return k.postReduceScatterV(sendbuf, recvbuf, recvcounts, dtype, op); });
    });
  });
}

}  // extern "C"
