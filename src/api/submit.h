// How a collective call hands its posted operation to the caller: a blocking call waits inside the
// communicator; a nonblocking one gets a request published as a live handle.
#pragma once

#include <psdp/psdp.h>

#include <memory>

#include "api/handle.h"
#include "base/status.h"

namespace psdp::api {

using RequestSlot = std::shared_ptr<core::Request>*;

// Runs `post` (a Communicator call taking a request slot, NULL for blocking) and, when the caller asked
// for a request, publishes it as a live handle. *request_p is written only on success.
template <typename Post>
Status submit(psdp_comm_h comm, psdp_request_h* request_p, Post&& post) {
  if (request_p == nullptr) return post(nullptr);
  // Allocated before posting, so that running out of memory cannot lose an operation already queued.
  auto handle = std::make_unique<psdp_request>();
  handle->comm = comm;
  PSDP_RETURN_IF_ERROR(post(&handle->impl));
  registerRequest(handle.get());
  *request_p = handle.release();
  return Status::ok();
}

}  // namespace psdp::api
