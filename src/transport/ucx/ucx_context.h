// RAII owners for the UCP configuration, context and worker, and the choices psdp makes when creating them.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/environment.h"
#include "base/log.h"
#include "base/raii.h"
#include "base/status.h"

namespace psdp::transport::ucx {

using UcpConfig = std::unique_ptr<ucp_config_t, FnDeleter<ucp_config_release>>;
using UcpContext = std::unique_ptr<ucp_context, FnDeleter<ucp_cleanup>>;
using UcpWorker = std::unique_ptr<ucp_worker, FnDeleter<ucp_worker_destroy>>;

struct ContextSpec {
  int estimated_num_eps = 1;
  // Variables without the UCX_ prefix, applied over the UCX_* environment.
  std::vector<std::pair<std::string, std::string>> overrides;
  // Whether psdp may enable CMA's single-copy rendezvous (see ucx_context.cc). Off for caller progress:
  // there the receiver's rendezvous acknowledgement can stay queued after its recv completed, and a rank
  // that then stops calling into psdp stalls its peer's send indefinitely.
  bool cma_rendezvous = true;
  // Where the user's UCX_* choices are looked up (so tests can vary them without setenv). Not null.
  const Environment* env = nullptr;
};

// Reads UCX_* from the environment (UCX_TLS, UCX_NET_DEVICES, ...), turns on shared-memory error handling
// and CMA's memory-invalidation capability unless the user decided them (see ucx_context.cc; each choice
// is logged at info level once per process), and creates a context with TAG and WAKEUP.
// Errors: system (no usable transport, bad UCX_* value), invalidArgument (bad override).
Result<UcpContext> createUcpContext(const ContextSpec& spec, spdlog::logger& log);

// Errors: system.
Result<UcpWorker> createUcpWorker(ucp_context_h context, ucs_thread_mode_t thread_mode);

// A copy of the worker's address, for the bootstrap's all-gather.
Result<std::vector<std::byte>> workerAddress(ucp_worker_h worker);

}  // namespace psdp::transport::ucx
