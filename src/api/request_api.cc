// The C boundary for requests of nonblocking collectives: handle checks, then the communicator's task queue.
#include <fmt/format.h>

#include <vector>

#include "api/guard.h"
#include "api/handle.h"

using psdp::Deadline;
using psdp::Status;
using psdp::api::checkHandle;
using psdp::api::checkRequest;
using psdp::api::finish;
using psdp::api::guarded;
using psdp::api::requestComm;

namespace {

Status inProgress() {
  return Status::make(PSDP_IN_PROGRESS, "in progress");
}

// The request's final status, or in progress. A pending request's communicator is live: destroying a
// communicator completes all of its requests.
Status waitRequest(psdp_request_h request, const Deadline& until) {
  PSDP_RETURN_IF_ERROR(checkRequest(request, "request"));
  psdp::core::Request& r = *request->impl;
  if (!r.isDone() && !request->comm->impl->wait(r, until)) return inProgress();
  return r.status();
}

}  // namespace

extern "C" {

PSDP_API psdp_status_t psdp_comm_after(psdp_comm_h comm, psdp_request_h request) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    PSDP_RETURN_IF_ERROR(checkRequest(request, "request"));
    // A request whose communicator is gone has completed (destroying a communicator completes its requests):
    // nothing is left to drive, only its status to pass on.
    psdp_comm_h owner = requestComm(request);
    return comm->impl->after(request->impl, owner != nullptr ? &owner->impl->context() : nullptr);
  });
}

PSDP_API psdp_status_t psdp_request_test(psdp_request_h request) {
  return guarded(requestComm(request), [&] {
    PSDP_RETURN_IF_ERROR(checkRequest(request, "request"));
    psdp::core::Request& r = *request->impl;
    if (!r.isDone() && !request->comm->impl->test(r)) return inProgress();
    return r.status();
  });
}

PSDP_API psdp_status_t psdp_request_wait(psdp_request_h request) {
  return guarded(requestComm(request), [&] { return waitRequest(request, Deadline::never()); });
}

PSDP_API psdp_status_t psdp_request_wait_timeout(psdp_request_h request, double timeout_s) {
  return guarded(requestComm(request), [&] {
    // NaN fails this test too.
    if (!(timeout_s >= 0)) return Status::invalidArgument("timeout_s is {}, must be at least 0", timeout_s);
    return waitRequest(request, Deadline::after(timeout_s));
  });
}

PSDP_API psdp_status_t psdp_request_wait_all(psdp_request_h* requests, size_t count) {
  return guarded(nullptr, [&]() -> Status {
    if (requests == nullptr && count > 0) return Status::invalidArgument("requests is NULL with count {}", count);
    std::vector<psdp::core::Communicator*> comms;
    std::vector<psdp::core::Request*> pending;
    for (size_t i = 0; i < count; ++i) {
      PSDP_RETURN_IF_ERROR(checkRequest(requests[i], fmt::format("requests[{}]", i).c_str()));
      // A pending request's communicator is live: destroying a communicator completes all of its requests.
      if (requests[i]->impl->isDone()) continue;
      comms.push_back(requests[i]->comm->impl.get());
      pending.push_back(requests[i]->impl.get());
    }
    psdp::core::Communicator::waitAll(comms, pending, Deadline::never());
    for (size_t i = 0; i < count; ++i) {
      const Status status = requests[i]->impl->status();
      if (status.isOk()) continue;
      // The failing request's communicator's last error too, as psdp_request_wait records it.
      (void)finish(requestComm(requests[i]), status);
      return status;
    }
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_request_free(psdp_request_h request) {
  return guarded(requestComm(request), [&] {
    PSDP_RETURN_IF_ERROR(checkRequest(request, "request"));
    if (!request->impl->isDone()) {
      return Status::invalidUsage("request is still in progress: wait for it (or test until done) before freeing it");
    }
    // Two threads freeing at once both pass the check above; only the one that unregisters deletes.
    if (!psdp::api::unregisterRequest(request)) return Status::invalidUsage("request was freed concurrently");
    delete request;
    return Status::ok();
  });
}

}  // extern "C"
