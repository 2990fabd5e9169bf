#include "transport/transport.h"

namespace psdp::transport {

Status waitFor(Transport& transport, const Completion& completion, const Deadline& deadline) {
  while (true) {
    uint32_t seen = transport.eventCount();
    if (completion.isDone()) return completion.status;
    PSDP_RETURN_IF_ERROR(transport.waitEvents(seen, deadline));
  }
}

}  // namespace psdp::transport
