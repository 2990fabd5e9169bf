// A UCP endpoint to one peer. Closing needs worker progress, so there is an explicit close(); the
// destructor of an endpoint still open force-closes it and warns.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/log.h"
#include "base/status.h"

namespace psdp::transport::ucx {

class UcxEndpoint {
 public:
  UcxEndpoint() = default;

  // Connects to a worker address with peer error handling: UCX reports a dead or unreachable peer through
  // `on_error(arg, ep, status)`. Errors: remote (the address is unusable), system.
  static Result<UcxEndpoint> create(ucp_worker_h worker, std::span<const std::byte> address, int peer,
                                    ucp_err_handler_cb_t on_error, void* arg, Logger log);

  UcxEndpoint(UcxEndpoint&& other) noexcept;
  UcxEndpoint& operator=(UcxEndpoint&& other) noexcept;
  UcxEndpoint(const UcxEndpoint&) = delete;
  UcxEndpoint& operator=(const UcxEndpoint&) = delete;
  ~UcxEndpoint();

  bool isOpen() const { return ep_ != nullptr; }
  ucp_ep_h get() const { return ep_; }

  // Flushes (or with `force`, abandons) outstanding operations and closes the endpoint, progressing the
  // worker until done or the deadline. After a flush that does not finish in time the close request is
  // handed back to UCX, which completes it or drops it with the worker. The endpoint is closed afterwards
  // either way. REQUIRES: no other thread calls into the worker meanwhile.
  // Errors: timeout, remote (the flush failed because the peer is gone).
  Status close(bool force, const Deadline& deadline);

  // The lanes UCX chose, one token per lane: "sysv/memory.0(am,am_bw#0,keepalive) cma/memory(rma_bw)".
  // REQUIRES: the caller holds the worker lock.
  std::string laneSummary() const;
  // The transports of those lanes ("sysv", "cma"), sorted and distinct. REQUIRES: as laneSummary().
  std::vector<std::string> laneTransports() const;

 private:
  UcxEndpoint(ucp_worker_h worker, ucp_ep_h ep, int peer, Logger log);

  ucp_worker_h worker_ = nullptr;
  ucp_ep_h ep_ = nullptr;
  int peer_ = -1;
  Logger log_;
};

}  // namespace psdp::transport::ucx
