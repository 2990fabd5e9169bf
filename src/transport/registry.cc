#include "transport/registry.h"

#include "transport/ucx/ucx_transport.h"

namespace psdp::transport {
namespace {

struct Backend {
  const char* name;
  Capabilities capabilities;
  Result<std::unique_ptr<Transport>> (*create)(const TransportParams& params);
};

// In order of preference; the first that can move the requested memory wins (NCCL's ncclTransports[]).
const Backend kBackends[] = {
    {"ucx", Capabilities{.host_memory = true, .cuda_memory = false}, &ucx::createUcxTransport},
};

}  // namespace

Result<std::unique_ptr<Transport>> createHostTransport(const TransportParams& params) {
  for (const Backend& backend : kBackends) {
    if (backend.capabilities.host_memory) return backend.create(params);
  }
  return Status::unsupported("no transport in this build can move host memory");
}

}  // namespace psdp::transport
