// The C boundary for point-to-point: psdp_send and psdp_recv.
#include "api/guard.h"
#include "api/handle.h"
#include "api/submit.h"
#include "api/validate.h"

using psdp::Status;
using psdp::api::callMemoryKind;
using psdp::api::checkHandle;
using psdp::api::checkRank;
using psdp::api::CollectiveArgs;
using psdp::api::guarded;
using psdp::api::RequestSlot;
using psdp::api::submit;
using psdp::api::validateCollective;
using psdp::coll::Collectives;

namespace {

// A blocking call to itself would wait for its own other half, which this thread can no longer post. Checked
// after the communicator's state, which a call on a finalized or failed communicator reports first.
Status checkNotBlockingOnItself(const char* call, int peer, const psdp::core::Communicator& c,
                                const psdp_request_h* request_p) {
  PSDP_RETURN_IF_ERROR(c.checkUsable(call));
  if (peer == c.rank() && request_p == nullptr) {
    return Status::invalidArgument(
        "{}: peer {} is this rank, and a blocking {} to itself can never be matched; post it nonblocking, then the "
        "other half, then wait for both",
        call, peer, call);
  }
  return Status::ok();
}

}  // namespace

extern "C" {

PSDP_API psdp_status_t psdp_send(const void* sendbuf, size_t count, psdp_dtype_t dtype, int peer, psdp_comm_h comm,
                                 void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_RETURN_IF_ERROR(checkRank("send", "peer", peer, c.size()));
    CollectiveArgs args{"send", sendbuf, nullptr,  count,  0,        0, /*send_inside_recv=*/true,
                        dtype,  false,   PSDP_SUM, stream, request_p};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    PSDP_RETURN_IF_ERROR(checkNotBlockingOnItself("send", peer, c, request_p));
    return submit(comm, request_p, [&](RequestSlot slot) {
      return c.post("send", callMemoryKind(args), slot,
                    [&](Collectives& k) { return k.postSend(sendbuf, count, dtype, peer); });
    });
  });
}

PSDP_API psdp_status_t psdp_recv(void* recvbuf, size_t count, psdp_dtype_t dtype, int peer, psdp_comm_h comm,
                                 void* stream, psdp_request_h* request_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::core::Communicator& c = *comm->impl;
    PSDP_RETURN_IF_ERROR(checkRank("recv", "peer", peer, c.size()));
    CollectiveArgs args{"recv", nullptr, recvbuf,  0,      count,    0, /*send_inside_recv=*/true,
                        dtype,  false,   PSDP_SUM, stream, request_p};
    PSDP_RETURN_IF_ERROR(validateCollective(args));
    PSDP_RETURN_IF_ERROR(checkNotBlockingOnItself("recv", peer, c, request_p));
    return submit(comm, request_p, [&](RequestSlot slot) {
      return c.post("recv", callMemoryKind(args), slot,
                    [&](Collectives& k) { return k.postRecv(recvbuf, count, dtype, peer); });
    });
  });
}

}  // extern "C"
