// The bootstrap's wire format, shared by the root and its clients. Every frame is a 16-byte header and a
// body; all integers are big-endian:
//
//   header   u32 magic "PSDB" | u16 protocol version | u16 frame type | u64 body bytes
//
//   kServerHello  root -> client on accept   (empty body) proves the listener speaks psdp before a
//                                              client reveals its secret to it
//   kHello        client -> root             16-byte secret | u32 rank | u32 nranks | u32 wait ms |
//                                              u32 payload bytes | payload
//   kAccepted     root -> client             (empty body) the secret was right and the rank is registered
//   kTable        root -> client             u32 nranks | nranks x (u32 bytes | payload), by rank
//   kError        root -> client             i32 psdp_status_t | u32 message bytes | message
//
// A client sends exactly one hello and then only reads; the root closes every connection once the table
// or an error has been written. "wait ms" is how long the client will wait for the table, so that the root
// can tell it which ranks are missing just before it gives up.
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
#include "core/rendezvous_id.h"

namespace psdp::core::bootstrap {

constexpr uint32_t kFrameMagic = 0x50534442;  // "PSDB"
constexpr uint16_t kProtocolVersion = 1;
constexpr size_t kHeaderBytes = 16;
constexpr size_t kHelloFixedBytes = 32;  // the hello body before the payload
constexpr size_t kMaxPayloadBytes = 64 * 1024;
constexpr int kMaxRanks = 1 << 20;
constexpr size_t kMaxErrorMessageBytes = 4096;

enum class FrameType : uint16_t { kServerHello = 1, kHello = 2, kAccepted = 3, kTable = 4, kError = 5 };

struct FrameHeader {
  uint32_t magic = 0;
  uint16_t version = 0;
  uint16_t type = 0;
  uint64_t body_bytes = 0;
};

struct Hello {
  JobSecret secret{};
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

// Whole frames (header and body), ready to send.
Frame encodeEmpty(FrameType type);
Frame encodeHello(const Hello& hello);
Frame encodeTable(const Table& table);
Frame encodeError(const Status& status);

// Bodies, after checkHeader accepted the header. Errors: invalid argument (malformed body).
Result<Hello> decodeHelloBody(std::span<const std::byte> body);
Result<Table> decodeTableBody(std::span<const std::byte> body, int nranks);
// The status the error frame carries (never OK: an unknown or success code becomes remote), its message
// escaped (escapePeerText).
Status decodeErrorBody(std::span<const std::byte> body);

// The largest body the root could send in a table for `nranks` ranks.
uint64_t maxTableBodyBytes(int nranks);
constexpr uint64_t kMaxHelloBodyBytes = kHelloFixedBytes + kMaxPayloadBytes;
constexpr uint64_t kMaxErrorBodyBytes = 8 + kMaxErrorMessageBytes;

// Text a peer sent, made safe to log: printable ASCII as is, a backslash doubled, a newline as \n and every
// other byte as \xNN, so that no peer can forge a log line (or a terminal escape) through psdp's log.
std::string escapePeerText(std::string_view text);

// Compares two secrets in time that does not depend on where they differ, so that timing the root's
// answers does not reveal a secret byte by byte.
bool secretsEqual(const JobSecret& a, const JobSecret& b);

// "2, 5-7, 9": compact rank lists for messages, at most `max_ranges` ranges then "...".
std::string formatRanks(const std::vector<int>& sorted_ranks, size_t max_ranges = 16);

}  // namespace psdp::core::bootstrap
