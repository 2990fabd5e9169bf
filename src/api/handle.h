// What a psdp_comm_h points to, and the registry of live handles that turns use-after-destroy into
// PSDP_ERR_INVALID_USAGE instead of a crash.
#pragma once

#include <psdp/psdp.h>

#include <memory>
#include <mutex>
#include <string>

#include "base/recycled.h"
#include "base/status.h"
#include "core/communicator.h"

struct psdp_comm {
  std::unique_ptr<psdp::core::Communicator> impl;
  // The message of the last failed call on this communicator; any thread may read or write it.
  std::mutex error_mutex;
  std::string last_error;
};

// What a psdp_request_h points to: the task queue's request, and the communicator it belongs to (for the
// last error, and to drive progress while the request is pending: destroying the communicator completes
// every request of it, so a pending request always has a live communicator). Recycled: its memory is reused
// by later requests, never returned, so posting allocates nothing once warmed up.
struct psdp_request : psdp::Recycled<psdp_request> {
  std::shared_ptr<psdp::core::Request> impl;
  psdp_comm_h comm = nullptr;
};

namespace psdp::api {

// Makes a new handle known (after successful creation) or forgets it (before deletion).
void registerHandle(psdp_comm_h comm);
void unregisterHandle(psdp_comm_h comm);

// OK if `comm` is a live handle; invalid argument for NULL, invalid usage for a destroyed or foreign one.
Status checkHandle(psdp_comm_h comm, const char* arg_name);

// The same for requests: a freed request is detected, not dereferenced.
void registerRequest(psdp_request_h request);
// False when it was not live (freed already, possibly by another thread just now).
bool unregisterRequest(psdp_request_h request);
Status checkRequest(psdp_request_h request, const char* arg_name);

// The communicator a live request's errors are recorded on, or NULL when the request is not live or its
// communicator is gone (then the error belongs to the calling thread).
psdp_comm_h requestComm(psdp_request_h request);

}  // namespace psdp::api
