// What a psdp_unique_id_t holds: where the bootstrap root listens, and the job secret every rank must
// present to it.
#pragma once

#include <psdp/psdp.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace psdp::core {

using JobSecret = std::array<uint8_t, 16>;

struct RendezvousId {
  std::string host;   // numeric IPv4 or IPv6 address of the root
  uint16_t port = 0;  // 0: the root listens on the first free port of PSDP_PORT_RANGE; clients scan it
  JobSecret secret{};

  // Encodes into / decodes from the opaque public struct (a versioned binary layout). Decoding rejects
  // bytes that psdp_get_unique_id did not produce (bad magic, version, length or address).
  void toUniqueId(psdp_unique_id_t* id) const;
  static Result<RendezvousId> fromUniqueId(const psdp_unique_id_t& id);

  // "psdp1:<host>:<port>:<32 hex>" (IPv6 hosts in brackets).
  std::string toString() const;
  static Result<RendezvousId> fromString(std::string_view text);

  // "host:port" without the secret: the only form that may be logged.
  std::string address() const;
};

// A fresh random secret from the OS (getrandom). Errors: system.
Result<JobSecret> randomSecret();
// 32 lowercase hex digits, and back (exactly 32 hex digits, either case).
std::string secretToHex(const JobSecret& secret);
Result<JobSecret> secretFromHex(std::string_view hex);

}  // namespace psdp::core
