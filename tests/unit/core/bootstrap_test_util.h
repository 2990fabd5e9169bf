// Helpers for the bootstrap tests: ranks as threads, and raw clients that speak (or abuse) the protocol
// by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/deadline.h"
#include "core/bootstrap.h"
#include "core/bootstrap_protocol.h"
#include "core/socket.h"

namespace spdlog::sinks {
class sink;
}

namespace psdp::core::testing {

using Table = std::vector<std::vector<std::byte>>;

// Defaults with loopback only, the kernel's choice of port and a 10 s timeout.
Config loopbackConfig();

// A payload no other rank has: its length and contents depend on the rank (rank 0's is empty).
std::vector<std::byte> payloadFor(int rank);

struct RankSpec {
  int rank = 0;
  int nranks = 1;
  JobSecret secret{};
  uint16_t port = 0;  // overrides the id's port when not 0
};

// Runs exchangeViaRoot for every spec in its own thread against `host`, each with `timeout_s`, and
// returns the results in spec order. The ranks' loggers also write to `sink` when it is given.
std::vector<Result<Table>> runRanks(const std::string& host, uint16_t port, const std::vector<RankSpec>& specs,
                                    const Config& config, double timeout_s,
                                    std::shared_ptr<spdlog::sinks::sink> sink = nullptr);

// Specs for ranks 0..n-1 of one job.
std::vector<RankSpec> jobOf(int nranks, const JobSecret& secret);

// The local addresses of the TCP sockets listening on `port`, as the kernel lists them in /proc/net/tcp
// and /proc/net/tcp6 ("127.0.0.1", "0.0.0.0", "::"): what the root really bound, whatever it reports.
std::vector<std::string> listenersOn(uint16_t port);

// A hand-driven connection to a root on 127.0.0.1.
class RawClient {
 public:
  // `rcvbuf` > 0 shrinks the receive buffer (and so the TCP window) before connecting, which keeps a
  // large frame queued in the root instead of in kernel buffers.
  static Result<RawClient> connect(uint16_t port, int rcvbuf = 0);
  // Reads the server hello and keeps the root's nonce; fails when the root sent something else.
  Status readServerHello();
  // The handshake up to the root's proof: server hello, our challenge, the proof. Mismatch when the proof
  // does not verify with `secret` (the connection stays usable, for a client that ignores it).
  Status handshake(const JobSecret& secret);
  // After the handshake: a hello for rank of nranks, sealed with `secret`.
  Status sendHello(const JobSecret& secret, int rank, int nranks, std::vector<std::byte> payload);
  Status send(std::span<const std::byte> bytes);
  // Reads one frame and returns its type.
  Result<uint16_t> readFrameType();
  const bootstrap::SessionNonces& nonces() const { return nonces_; }
  // True when the root closes the connection (EOF or reset) within `seconds`; bytes it sends meanwhile
  // are skipped.
  bool closedWithin(double seconds);

 private:
  Socket socket_;
  bootstrap::SessionNonces nonces_;
};

// A listening socket on 127.0.0.1 at a port the kernel picks, for hand-made roots, squatters and relays.
class LoopbackListener {
 public:
  static Result<LoopbackListener> open();
  uint16_t port() const { return port_; }
  // The next connection; timeout when none comes within `seconds`.
  Result<Socket> accept(double seconds);

 private:
  UniqueFd fd_;
  uint16_t port_ = 0;
};

// One frame as it came off the wire.
struct RawFrame {
  bootstrap::FrameHeader header;
  bootstrap::Frame bytes;  // header and body
  std::span<const std::byte> body() const { return std::span(bytes).subspan(bootstrap::kHeaderBytes); }
};
// Reads one whole frame whose body is at most `max_body` bytes.
Result<RawFrame> readFrame(Socket& socket, uint64_t max_body, const Deadline& deadline);

// The root's side of the handshake on an accepted socket, for a hand-made root that holds `secret`: server
// hello, the client's challenge, our proof. Returns the session's nonces.
Result<bootstrap::SessionNonces> serveHandshake(Socket& socket, const JobSecret& secret, const Deadline& deadline);

}  // namespace psdp::core::testing
