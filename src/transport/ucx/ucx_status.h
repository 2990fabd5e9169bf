// The one place where UCX status codes become psdp Status values (NCCL's CUDACHECK idea: convert foreign
// codes once, at the edge).
#pragma once

#include <ucs/type/status.h>

#include <string_view>

#include "base/status.h"

namespace psdp::transport::ucx {

// OK for UCS_OK; otherwise "<what>: <ucs_status_string>" with the closest psdp code: remote for peer and
// connection failures, timeout, mismatch for a truncated message, aborted for a canceled request, system
// for resource shortages, internal for anything else.
Status ucsStatus(ucs_status_t status, std::string_view what);

// psdp code for a UCX error, for callers that build their own message.
psdp_status_t ucsStatusCode(ucs_status_t status);

}  // namespace psdp::transport::ucx

// Evaluates a UCX call once; returns the converted status from the enclosing function on error.
#define PSDP_UCS_CHECK(expr, what) PSDP_RETURN_IF_ERROR(::psdp::transport::ucx::ucsStatus((expr), (what)))
