// The backends psdp knows, in order of preference. The only code besides core/ that names a backend.
#pragma once

#include <memory>

#include "transport/transport.h"

namespace psdp::transport {

// Creates the preferred backend that can move host memory (UCX).
Result<std::unique_ptr<Transport>> createHostTransport(const TransportParams& params);

}  // namespace psdp::transport
