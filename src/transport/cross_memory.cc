#include "transport/cross_memory.h"

#include <sys/uio.h>

#include <cerrno>

namespace psdp::transport {

Status readProcessMemory(uint32_t pid, uint64_t address, void* local, size_t bytes, int* failed_errno) {
  auto* to = static_cast<std::byte*>(local);
  while (bytes > 0) {
    iovec mine{to, bytes};
    iovec theirs{reinterpret_cast<void*>(address), bytes};
    ssize_t got = process_vm_readv(static_cast<pid_t>(pid), &mine, 1, &theirs, 1, 0);
    if (got <= 0) {
      int err = got < 0 ? errno : EFAULT;
      if (failed_errno != nullptr) *failed_errno = err;
      return Status::fromErrno(
          err, fmt::format("reading {} bytes at {:#x} of pid {} (process_vm_readv)", bytes, address, pid));
    }
    // A partial read stops at a page the other process has not mapped; the next call reports why.
    to += got;
    address += static_cast<uint64_t>(got);
    bytes -= static_cast<size_t>(got);
  }
  return Status::ok();
}

}  // namespace psdp::transport
