// The one guard every extern "C" body runs in: converts Status into psdp_status_t, stores the message as
// the last error (of the communicator, or of the calling thread when there is none), and catches any C++
// exception (std::bad_alloc, or one thrown by spdlog/fmt) so that none crosses the C boundary.
#pragma once

#include <psdp/psdp.h>

#include <exception>
#include <new>

#include "api/handle.h"
#include "base/status.h"

namespace psdp::api {

// Records `status` as the last error of `comm` (NULL: of this thread) when it is an error.
psdp_status_t finish(psdp_comm_h comm, const Status& status);

template <typename Body>
psdp_status_t guarded(psdp_comm_h comm, Body&& body) noexcept {
  try {
    return finish(comm, body());
  } catch (const std::bad_alloc&) {
    return finish(comm, Status::system("out of memory"));
  } catch (const std::exception& e) {
    return finish(comm, Status::internal("unexpected exception: {}", e.what()));
  } catch (...) {
    return finish(comm, Status::internal("unexpected exception"));
  }
}

}  // namespace psdp::api
