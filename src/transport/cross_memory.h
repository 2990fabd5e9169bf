// Reads another process's memory directly (CMA, process_vm_readv): the kernel copies from the other
// process's pages into this one's, with no copy in between and no help from the other process. The kernel
// allows it to a process that may ptrace-read the other one (the same user, no Yama restriction); UCX's CMA
// rendezvous, which psdp uses between the ranks of a host, depends on the same permission.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace psdp::transport {

// Copies `bytes` from `address` in process `pid` to `local`, in as many calls as the kernel needs. Errors:
// system (naming pid, address and errno: no permission, the process is gone, or the range is not mapped);
// the errno goes to *failed_errno too when it is given.
Status readProcessMemory(uint32_t pid, uint64_t address, void* local, size_t bytes, int* failed_errno = nullptr);

}  // namespace psdp::transport
