// The C boundary of psdp_mem_alloc and psdp_mem_free: argument checks, then the shared-segment allocator.
#include "api/guard.h"
#include "transport/peer_memory.h"

using psdp::Status;
using psdp::api::guarded;

extern "C" {

PSDP_API psdp_status_t psdp_mem_alloc(void** ptr_p, size_t bytes) {
  return guarded(nullptr, [&]() -> Status {
    if (ptr_p == nullptr) return Status::invalidArgument("psdp_mem_alloc: ptr_p is NULL");
    *ptr_p = nullptr;
    if (bytes == 0) return Status::invalidArgument("psdp_mem_alloc: bytes is 0");
    PSDP_ASSIGN_OR_RETURN(void* ptr, psdp::transport::allocateShareableMemory(bytes));
    *ptr_p = ptr;
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_mem_free(void* ptr) {
  return guarded(nullptr, [&]() -> Status {
    if (ptr == nullptr) return Status::ok();
    return psdp::transport::freeShareableMemory(ptr).withContext("psdp_mem_free");
  });
}

}  // extern "C"
