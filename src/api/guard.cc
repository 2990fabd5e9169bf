#include "api/guard.h"

#include <string>

namespace psdp::api {
namespace {
thread_local std::string thread_last_error;
thread_local std::string returned_error;
}  // namespace

psdp_status_t finish(psdp_comm_h comm, const Status& status) {
  if (status.isOk()) return PSDP_SUCCESS;
  // Not an error (a pending request): the last error stays what it was.
  if (status.code() == PSDP_IN_PROGRESS) return PSDP_IN_PROGRESS;
  // Only a handle that is live may be written to; for a bad handle the error belongs to the thread.
  if (comm != nullptr && checkHandle(comm, "comm").isOk()) {
    std::lock_guard<std::mutex> lock(comm->error_mutex);
    comm->last_error = status.message();
  } else {
    thread_last_error = status.message();
  }
  return status.code();
}

}  // namespace psdp::api

extern "C" PSDP_API const char* psdp_get_last_error(psdp_comm_h comm) {
  using namespace psdp::api;
  try {
    if (comm == nullptr || !checkHandle(comm, "comm").isOk()) {
      returned_error = thread_last_error;
    } else {
      std::lock_guard<std::mutex> lock(comm->error_mutex);
      returned_error = comm->last_error;
    }
    return returned_error.c_str();
  } catch (...) {
    return "out of memory while reading the last error";
  }
}
