// The C boundary for calls that are declared but not implemented yet: the same argument checks as the
// collectives (so that a caller's bug is reported as such first) and the same refusal on a finalized or failed
// communicator, then unsupported, through the one guard that records the last error. Nothing is posted.
#include "api/guard.h"
#include "api/handle.h"
#include "api/validate.h"

using psdp::Status;
using psdp::api::checkHandle;
using psdp::api::CollectiveArgs;
using psdp::api::countTimesRanks;
using psdp::api::guarded;
using psdp::api::validateCollective;

namespace {

Status checkRank(const char* call, const char* name, int value, int nranks) {
  if (value < 0 || value >= nranks) {
    return Status::invalidArgument("{}: {} {} is outside [0, {})", call, name, value, nranks);
  }
  return Status::ok();
}

}  // namespace

extern "C" {

PSDP_API psdp_status_t psdp_send(const void* sendbuf, size_t count, psdp_dtype_t dtype, int peer, psdp_comm_h comm,
                                 void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    PSDP_RETURN_IF_ERROR(checkRank("send", "peer", peer, comm->impl->size()));
    CollectiveArgs args{"send", sendbuf, nullptr,  count,  0,        0, /*send_inside_recv=*/true,
                        dtype,  false,   PSDP_SUM, stream, request_p};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    PSDP_RETURN_IF_ERROR(comm->impl->checkUsable(args.name));
    return Status::unsupported(
        "psdp_send is not implemented yet; move point-to-point data with psdp_broadcast or psdp_all_gather");
  });
}

PSDP_API psdp_status_t psdp_recv(void* recvbuf, size_t count, psdp_dtype_t dtype, int peer, psdp_comm_h comm,
                                 void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    PSDP_RETURN_IF_ERROR(checkRank("recv", "peer", peer, comm->impl->size()));
    CollectiveArgs args{"recv", nullptr, recvbuf,  0,      count,    0, /*send_inside_recv=*/true,
                        dtype,  false,   PSDP_SUM, stream, request_p};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    PSDP_RETURN_IF_ERROR(comm->impl->checkUsable(args.name));
    return Status::unsupported(
        "psdp_recv is not implemented yet; move point-to-point data with psdp_broadcast or psdp_all_gather");
  });
}

PSDP_API psdp_status_t psdp_all_to_all(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype,
                                       psdp_comm_h comm, void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    PSDP_ASSIGN_OR_RETURN(size_t total, countTimesRanks("all-to-all", count, comm->impl->size()));
    // An in-place offset of `total` never makes overlapping buffers count as in place: all-to-all has none.
    CollectiveArgs args{"all-to-all", sendbuf, recvbuf,  total,  total,    total, /*send_inside_recv=*/true,
                        dtype,        false,   PSDP_SUM, stream, request_p};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    PSDP_RETURN_IF_ERROR(comm->impl->checkUsable(args.name));
    return Status::unsupported(
        "psdp_all_to_all is not implemented yet; for equal blocks, psdp_all_gather of every block and a local "
        "selection gives the same result");
  });
}

PSDP_API psdp_status_t psdp_gather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype, int root,
                                   psdp_comm_h comm, void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_RETURN_IF_ERROR(checkRank("gather", "root", root, c.size()));
    PSDP_ASSIGN_OR_RETURN(size_t total, countTimesRanks("gather", sendcount, c.size()));
    // Only the root reads recvbuf, so only there is it checked (and may hold sendbuf, in place).
    size_t recv_count = c.rank() == root ? total : 0;
    CollectiveArgs args{"gather",
                        sendbuf,
                        recvbuf,
                        sendcount,
                        recv_count,
                        sendcount * c.rank(),
                        /*send_inside_recv=*/true,
                        dtype,
                        false,
                        PSDP_SUM,
                        stream,
                        request_p};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    PSDP_RETURN_IF_ERROR(comm->impl->checkUsable(args.name));
    return Status::unsupported(
        "psdp_gather is not implemented yet; psdp_all_gather gives every rank, the root included, the same data");
  });
}

}  // extern "C"
