// What a psdp_comm_h points to, and the registry of live handles that turns use-after-destroy into
// PSDP_ERR_INVALID_USAGE instead of a crash.
#pragma once

#include <psdp/psdp.h>

#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "core/communicator.h"

struct psdp_comm {
  std::unique_ptr<psdp::core::Communicator> impl;
  // The message of the last failed call on this communicator; any thread may read or write it.
  std::mutex error_mutex;
  std::string last_error;
};

namespace psdp::api {

// Makes a new handle known (after successful creation) or forgets it (before deletion).
void registerHandle(psdp_comm_h comm);
void unregisterHandle(psdp_comm_h comm);

// OK if `comm` is a live handle; invalid argument for NULL, invalid usage for a destroyed or foreign one.
Status checkHandle(psdp_comm_h comm, const char* arg_name);

}  // namespace psdp::api
