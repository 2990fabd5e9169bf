// The bootstrap's wire format, shared by the root and its clients. Every frame is a 16-byte header and a
// body; all integers are big-endian:
//
//   header   u32 magic "PSDB" | u16 protocol version | u16 frame type | u64 body bytes
//
//   kServerHello  root -> client on accept   16-byte root nonce
//   kChallenge    client -> root             16-byte client nonce
//   kRootProof    root -> client             MAC                     the root holds the job secret
//   kHello        client -> root             MAC | u32 rank | u32 nranks | u32 wait ms | u32 payload bytes |
//                                              payload
//   kAccepted     root -> client             MAC                     the hello was authentic; rank registered
//   kTable        root -> client             MAC | u32 nranks | nranks x (u32 bytes | payload), by rank
//   kError        root -> client             MAC | i32 psdp_status_t | u32 message bytes | message
//
// Frames after the nonces are sealed: their body starts with a MAC (bootstrap_auth.h) over the version,
// the type, both nonces and the digest of the rest of the body. The secret itself never travels. A client
// checks the root's proof before it sends its hello, then sends exactly one hello and only reads; the root
// closes every connection once the table or an error has been written. "wait ms" is how long the client
// will wait for the table, so that the root can tell it which ranks are missing just before it gives up.
#pragma once

#include <psdp/psdp.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "core/bootstrap_auth.h"
#include "core/rendezvous_id.h"

namespace psdp::core::bootstrap {

constexpr uint32_t kFrameMagic = 0x50534442;  // "PSDB"
constexpr uint16_t kProtocolVersion = 2;
constexpr size_t kHeaderBytes = 16;
constexpr size_t kMacBytes = sizeof(Mac);
constexpr size_t kNonceBytes = sizeof(Nonce);
constexpr size_t kHelloFixedBytes = 16;  // the hello's fields after the MAC, before the payload
constexpr size_t kMaxPayloadBytes = 64 * 1024;
constexpr int kMaxRanks = 1 << 20;
constexpr size_t kMaxErrorMessageBytes = 4096;

enum class FrameType : uint16_t {
  kServerHello = 1,
  kHello = 2,
  kAccepted = 3,
  kTable = 4,
  kError = 5,
  kChallenge = 6,
  kRootProof = 7,
};

struct FrameHeader {
  uint32_t magic = 0;
  uint16_t version = 0;
  uint16_t type = 0;
  uint64_t body_bytes = 0;
};

struct Hello {
  uint32_t rank = 0;
  uint32_t nranks = 0;
  uint32_t wait_ms = 0;
  std::vector<std::byte> payload;
};

using Frame = std::vector<std::byte>;
using Table = std::vector<std::vector<std::byte>>;

FrameHeader decodeHeader(std::span<const std::byte, kHeaderBytes> bytes);
// Why `header` is not an acceptable frame of type `expected` with a body of at most `max_body` bytes, or
// an empty string. The reason names values, never frame contents (a hello carries a secret).
std::string checkHeader(const FrameHeader& header, FrameType expected, uint64_t max_body);
// Like checkHeader, for a frame that may be either of two types.
std::string checkHeader(const FrameHeader& header, FrameType a, FrameType b, uint64_t max_body_a, uint64_t max_body_b);

// Whole frames (header and body), ready to send: the two nonce frames.
Frame encodeServerHello(const Nonce& root_nonce);
Frame encodeChallenge(const Nonce& client_nonce);
// The body of a nonce frame, after checkHeader. Errors: invalid argument (not exactly one nonce).
Result<Nonce> decodeNonceBody(std::span<const std::byte> body);

// What a sealed frame carries after its MAC.
std::vector<std::byte> encodeHelloRest(const Hello& hello);
std::vector<std::byte> encodeTableRest(const Table& table);
std::vector<std::byte> encodeErrorRest(const Status& status);

// The header and MAC of a sealed frame on the connection of `nonces` whose rest (`rest_bytes` bytes with
// digest `rest_digest`) is sent right after them: a table shared by every rank is hashed once and sent
// from one buffer. Errors: system (libcrypto failed).
Result<Frame> encodeSealedHead(FrameType type, const JobSecret& secret, const SessionNonces& nonces,
                               const Digest& rest_digest, uint64_t rest_bytes);
// A whole sealed frame.
Result<Frame> encodeSealed(FrameType type, const JobSecret& secret, const SessionNonces& nonces,
                           std::span<const std::byte> rest);
// The rest of a sealed frame's body (after checkHeader accepted a header of `type`). Errors: invalid
// argument (shorter than a MAC), mismatch (the MAC does not verify: the sender does not hold `secret`, or
// the frame was made for another connection or altered on the way).
Result<std::span<const std::byte>> openSealed(FrameType type, std::span<const std::byte> body, const JobSecret& secret,
                                              const SessionNonces& nonces);

// The rests of sealed frames, once opened. Errors: invalid argument (malformed).
Result<Hello> decodeHelloRest(std::span<const std::byte> rest);
Result<Table> decodeTableRest(std::span<const std::byte> rest, int nranks);
// The status the error frame carries (never OK: an unknown or success code becomes remote), its message
// escaped (escapePeerText).
Status decodeErrorRest(std::span<const std::byte> rest);

// The largest body the root could send in a table for `nranks` ranks.
uint64_t maxTableBodyBytes(int nranks);
constexpr uint64_t kMaxHelloBodyBytes = kMacBytes + kHelloFixedBytes + kMaxPayloadBytes;
constexpr uint64_t kMaxErrorBodyBytes = kMacBytes + 8 + kMaxErrorMessageBytes;

// Text a peer sent, made safe to log: printable ASCII as is, a backslash doubled, a newline as \n and every
// other byte as \xNN, so that no peer can forge a log line (or a terminal escape) through psdp's log.
std::string escapePeerText(std::string_view text);

// "2, 5-7, 9": compact rank lists for messages, at most `max_ranges` ranges then "...".
std::string formatRanks(const std::vector<int>& sorted_ranks, size_t max_ranges = 16);

}  // namespace psdp::core::bootstrap
