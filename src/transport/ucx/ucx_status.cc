#include "transport/ucx/ucx_status.h"

namespace psdp::transport::ucx {

psdp_status_t ucsStatusCode(ucs_status_t status) {
  // Link and endpoint failures are ranges of codes reserved for transports' own variants.
  if (UCS_IS_LINK_ERROR(status) || UCS_IS_ENDPOINT_ERROR(status)) return PSDP_ERR_REMOTE;
  switch (status) {
    case UCS_OK:
    case UCS_INPROGRESS: return PSDP_SUCCESS;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_REJECTED: return PSDP_ERR_REMOTE;
    case UCS_ERR_TIMED_OUT: return PSDP_ERR_TIMEOUT;
    case UCS_ERR_MESSAGE_TRUNCATED: return PSDP_ERR_MISMATCH;
    case UCS_ERR_CANCELED: return PSDP_ERR_ABORTED;
    case UCS_ERR_UNSUPPORTED: return PSDP_ERR_UNSUPPORTED;
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR: return PSDP_ERR_INVALID_ARGUMENT;
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_NO_DEVICE:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_BUSY:
    case UCS_ERR_EXCEEDS_LIMIT:
    case UCS_ERR_SHMEM_SEGMENT: return PSDP_ERR_SYSTEM;
    default: return PSDP_ERR_INTERNAL;
  }
}

Status ucsStatus(ucs_status_t status, std::string_view what) {
  psdp_status_t code = ucsStatusCode(status);
  if (code == PSDP_SUCCESS) return Status::ok();
  return Status::make(code, "{}: {}", what, ucs_status_string(status));
}

}  // namespace psdp::transport::ucx
