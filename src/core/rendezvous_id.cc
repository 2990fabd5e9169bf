#include "core/rendezvous_id.h"

#include <arpa/inet.h>
#include <sys/random.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "core/net_address.h"

namespace psdp::core {
namespace {

// Binary layout of psdp_unique_id_t.internal, all integers big-endian so that an id copied between
// machines of either byte order decodes the same:
//   [0, 4)    magic "PSID"
//   [4, 6)    format version
//   [6]       address family: 4 or 6
//   [7]       reserved, 0
//   [8, 10)   port
//   [10, 12)  reserved, 0
//   [12, 28)  address (IPv4 in the first 4 bytes, the rest 0)
//   [28, 44)  job secret
//   [44, 48)  FNV-1a 32 of bytes [0, 44): catches ids that were truncated or overwritten in transit
//   [48, 128) 0
constexpr uint32_t kIdMagic = 0x50534944;  // "PSID"
constexpr uint16_t kIdVersion = 1;
constexpr size_t kFamilyOffset = 6;
constexpr size_t kPortOffset = 8;
constexpr size_t kAddrOffset = 12;
constexpr size_t kSecretOffset = 28;
constexpr size_t kChecksumOffset = 44;
constexpr size_t kUsedBytes = 48;
static_assert(kUsedBytes <= PSDP_UNIQUE_ID_BYTES);

constexpr std::string_view kStringPrefix = "psdp1:";

using IdBytes = unsigned char[PSDP_UNIQUE_ID_BYTES];

void putBe(unsigned char* p, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) p[i] = static_cast<unsigned char>(v & 0xff);
}

uint64_t getBe(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

uint32_t fnv1a32(const unsigned char* p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}

Status badId(std::string_view why) {
  return Status::invalidArgument("unique id was not made by psdp: {}", why);
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes the address part of an id; the rest of the layout is checked by the caller.
Result<std::string> decodeHost(const unsigned char* b) {
  int family = b[kFamilyOffset];
  char text[INET6_ADDRSTRLEN] = {};
  if (family == 4) {
    for (size_t i = kAddrOffset + 4; i < kAddrOffset + 16; ++i) {
      if (b[i] != 0) return badId("IPv4 address has non-zero padding");
    }
    in_addr a{};
    std::memcpy(&a, b + kAddrOffset, 4);
    if (a.s_addr == INADDR_ANY) return badId("unspecified address");
    inet_ntop(AF_INET, &a, text, sizeof(text));
  } else if (family == 6) {
    in6_addr a{};
    std::memcpy(&a, b + kAddrOffset, 16);
    if (IN6_IS_ADDR_UNSPECIFIED(&a)) return badId("unspecified address");
    inet_ntop(AF_INET6, &a, text, sizeof(text));
  } else {
    return badId(fmt::format("address family {}", family));
  }
  return std::string(text);
}

}  // namespace

void RendezvousId::toUniqueId(psdp_unique_id_t* id) const {
  std::memset(id->internal, 0, sizeof(id->internal));
  auto* b = reinterpret_cast<unsigned char*>(id->internal);
  in6_addr a6{};
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) {
    b[kFamilyOffset] = 4;
    std::memcpy(b + kAddrOffset, &a4, 4);
  } else if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) {
    b[kFamilyOffset] = 6;
    std::memcpy(b + kAddrOffset, &a6, 16);
  } else {
    // Leaves an all-zero id, which fromUniqueId rejects: every producer of a RendezvousId stores a numeric
    // host, so this is a bug the decoding rank reports rather than a silent wrong address.
    return;
  }
  putBe(b, kIdMagic, 4);
  putBe(b + 4, kIdVersion, 2);
  putBe(b + kPortOffset, port, 2);
  std::memcpy(b + kSecretOffset, secret.data(), secret.size());
  putBe(b + kChecksumOffset, fnv1a32(b, kChecksumOffset), 4);
}

Result<RendezvousId> RendezvousId::fromUniqueId(const psdp_unique_id_t& id) {
  const auto* b = reinterpret_cast<const unsigned char*>(id.internal);
  if (getBe(b, 4) != kIdMagic) return badId("bad magic");
  if (getBe(b + 4, 2) != kIdVersion) return badId(fmt::format("format version {}", getBe(b + 4, 2)));
  if (getBe(b + kChecksumOffset, 4) != fnv1a32(b, kChecksumOffset)) return badId("checksum does not match");
  if (b[7] != 0 || b[10] != 0 || b[11] != 0) return badId("reserved bytes are set");
  for (size_t i = kUsedBytes; i < PSDP_UNIQUE_ID_BYTES; ++i) {
    if (b[i] != 0) return badId("trailing bytes are set");
  }
  RendezvousId out;
  PSDP_ASSIGN_OR_RETURN(out.host, decodeHost(b));
  out.port = static_cast<uint16_t>(getBe(b + kPortOffset, 2));
  std::memcpy(out.secret.data(), b + kSecretOffset, out.secret.size());
  return out;
}

std::string RendezvousId::address() const {
  return formatHostPort(host, port);
}

std::string RendezvousId::toString() const {
  return fmt::format("{}{}:{}", kStringPrefix, address(), secretToHex(secret));
}

Result<RendezvousId> RendezvousId::fromString(std::string_view text) {
  // The text holds the secret: error messages describe what is wrong, never echo the input.
  auto bad = [](std::string_view why) {
    return Status::invalidArgument("unique id string is not 'psdp1:<host>:<port>:<32 hex>': {}", why);
  };
  if (text.substr(0, kStringPrefix.size()) != kStringPrefix) return bad("missing 'psdp1:' prefix");
  std::string_view rest = text.substr(kStringPrefix.size());
  RendezvousId out;
  bool bracketed = !rest.empty() && rest.front() == '[';
  size_t host_end = bracketed ? rest.find(']') : rest.find(':');
  if (host_end == std::string_view::npos) return bad("no port");
  out.host = std::string(rest.substr(bracketed ? 1 : 0, bracketed ? host_end - 1 : host_end));
  rest = rest.substr(host_end + (bracketed ? 1 : 0));
  auto addr = SockAddr::numeric(out.host, 0);
  if (!addr.isOk()) return bad("host is not a numeric IPv4 or IPv6 address");
  if ((addr.value().family() == AF_INET6) != bracketed) return bad("IPv6 hosts, and only they, go in brackets");
  if (rest.empty() || rest.front() != ':') return bad("no port");
  rest.remove_prefix(1);
  size_t port_end = rest.find(':');
  if (port_end == std::string_view::npos) return bad("no secret");
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + port_end, port);
  if (ec != std::errc() || ptr != rest.data() + port_end || port_end == 0 || port > 65535) return bad("bad port");
  out.port = static_cast<uint16_t>(port);
  auto secret = secretFromHex(rest.substr(port_end + 1));
  if (!secret.isOk()) return bad("secret is not 32 hex digits");
  out.secret = secret.value();
  return out;
}

Result<JobSecret> randomSecret() {
  JobSecret secret{};
  size_t done = 0;
  while (done < secret.size()) {
    ssize_t n = getrandom(secret.data() + done, secret.size() - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::fromErrno(errno, "getrandom");
    done += static_cast<size_t>(n);
  }
  return secret;
}

std::string secretToHex(const JobSecret& secret) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(secret.size() * 2);
  for (uint8_t b : secret) {
    out += kDigits[b >> 4];
    out += kDigits[b & 0xf];
  }
  return out;
}

Result<JobSecret> secretFromHex(std::string_view hex) {
  JobSecret secret{};
  if (hex.size() != secret.size() * 2) {
    return Status::invalidArgument("job secret has {} characters, not {} hex digits", hex.size(), secret.size() * 2);
  }
  for (size_t i = 0; i < secret.size(); ++i) {
    int hi = hexValue(hex[2 * i]);
    int lo = hexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Status::invalidArgument("job secret has a character that is not a hex digit");
    secret[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return secret;
}

}  // namespace psdp::core
