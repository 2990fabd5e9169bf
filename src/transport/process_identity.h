// Which process a rank runs in, as far as another process on the same host can check: its pid, the pid
// namespace that pid belongs to, and the host's boot id. Backends put it in front of their addresses so
// that a peer on the same host can watch the process itself (peer_liveness.h) instead of waiting for a
// transport-level keepalive to notice that it died.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace psdp::transport {

struct ProcessIdentity {
  uint32_t pid = 0;
  uint64_t pid_namespace = 0;         // inode of /proc/self/ns/pid; 0 when unknown
  std::array<uint8_t, 16> boot_id{};  // /proc/sys/kernel/random/boot_id; all zero when unknown

  // Bytes of encode()'s output.
  static constexpr size_t kEncodedBytes = 40;

  // This process. Never fails: what cannot be read is left unknown.
  static const ProcessIdentity& self();

  // Whether `other` is a different process whose pid means the same thing here: same boot of the same
  // host and same pid namespace, with both known.
  bool isOtherLocalProcess(const ProcessIdentity& other) const;

  // Appends kEncodedBytes to `out`, or fills `out`.
  void encode(std::vector<std::byte>& out) const;
  void encode(std::span<std::byte, kEncodedBytes> out) const;
  // Reads kEncodedBytes from the front of `in`. Errors: invalid argument (too short, not an identity).
  static Result<ProcessIdentity> decode(std::span<const std::byte> in);
};

// Whether process `pid` of this pid namespace is stopped (SIGSTOP, or held by a debugger): /proc/<pid>/stat
// says T or t. False when it cannot be read (no such process).
bool processIsStopped(uint32_t pid);

}  // namespace psdp::transport
