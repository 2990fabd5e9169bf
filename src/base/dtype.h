// Sizes and names of the public dtype enum, for every room that handles typed buffers (collectives, the
// shard planner) and for messages.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>

namespace psdp {

size_t dtypeSize(psdp_dtype_t dtype);       // bytes of one element; 0 for a value outside psdp_dtype_t
const char* dtypeName(psdp_dtype_t dtype);  // "bfloat16"; "unknown" outside psdp_dtype_t

}  // namespace psdp
