// The client side of the bootstrap: find the root (retrying while it is not up yet, scanning the port
// range when the id names no port), say hello, wait for the table.
#include <algorithm>
#include <chrono>
#include <thread>

#include "core/bootstrap.h"
#include "core/bootstrap_protocol.h"
#include "core/socket.h"

namespace psdp::core {
namespace {

using bootstrap::FrameType;

// How long one connect may take: a remote host that drops SYNs must not stall a scan for the whole
// deadline.
constexpr double kConnectTimeoutS = 2.0;
// How long a listener may take to show it is a psdp root (server hello) and to accept our hello. A root
// answers from its poll loop at once; a silent listener on a scanned port is skipped after this.
constexpr double kScanHandshakeTimeoutS = 1.0;
constexpr double kFixedHandshakeTimeoutS = 5.0;
constexpr double kFirstBackoffS = 0.01;
constexpr double kMaxBackoffS = 0.5;

// One attempt at one port: a socket whose hello the root accepted, the root's verdict (an error frame, or
// a rejection on a port we were told to use), or "nobody suitable there" with the reason.
struct Attempt {
  enum class Kind { kAccepted, kAbsent, kFinal } kind = Kind::kAbsent;
  Socket socket;
  Status status;  // kAbsent: why; kFinal: the error to return
};

Attempt absent(Status why) {
  return Attempt{Attempt::Kind::kAbsent, Socket(), std::move(why)};
}
Attempt decided(Status status) {
  return Attempt{Attempt::Kind::kFinal, Socket(), std::move(status)};
}

// Reads a frame header and checks it is one of `a`/`b` within the given size limits.
Result<bootstrap::FrameHeader> readHeader(Socket& socket, FrameType a, FrameType b, uint64_t max_a, uint64_t max_b,
                                          const Deadline& deadline) {
  std::array<std::byte, bootstrap::kHeaderBytes> bytes{};
  PSDP_RETURN_IF_ERROR(socket.recvAll(bytes, deadline));
  bootstrap::FrameHeader header = bootstrap::decodeHeader(bytes);
  std::string bad = bootstrap::checkHeader(header, a, b, max_a, max_b);
  if (!bad.empty()) return Status::remote("not a psdp bootstrap root: {}", bad);
  return header;
}

Result<std::vector<std::byte>> readBody(Socket& socket, const bootstrap::FrameHeader& header,
                                        const Deadline& deadline) {
  std::vector<std::byte> body(header.body_bytes);
  PSDP_RETURN_IF_ERROR(socket.recvAll(body, deadline));
  return body;
}

uint32_t waitMs(const Deadline& deadline) {
  if (deadline.isNever()) return UINT32_MAX;
  return static_cast<uint32_t>(std::min(deadline.remainingSeconds() * 1000.0, double{UINT32_MAX - 1}));
}

Attempt tryRoot(const SockAddr& addr, bootstrap::Hello& hello, bool scanning, const Deadline& deadline) {
  auto connected = Socket::connect(addr, deadline.min(Deadline::after(kConnectTimeoutS)));
  if (!connected.isOk()) return absent(connected.status());
  Socket socket = std::move(connected).value();
  Deadline handshake = deadline.min(Deadline::after(scanning ? kScanHandshakeTimeoutS : kFixedHandshakeTimeoutS));
  auto server_hello = readHeader(socket, FrameType::kServerHello, FrameType::kServerHello, 0, 0, handshake);
  if (!server_hello.isOk()) return absent(server_hello.status());
  // Only now, talking to a psdp root, does the secret leave this process.
  hello.wait_ms = waitMs(deadline);
  Status sent = socket.sendAll(bootstrap::encodeHello(hello), handshake);
  if (!sent.isOk()) return absent(sent);
  auto answer =
      readHeader(socket, FrameType::kAccepted, FrameType::kError, 0, bootstrap::kMaxErrorBodyBytes, handshake);
  if (!answer.isOk()) {
    if (answer.status().code() != PSDP_ERR_REMOTE || scanning) return absent(answer.status());
    // The root we were sent to closed on our hello: it drops hellos with a wrong secret or version.
    return decided(
        Status::mismatch("the bootstrap root at {} rejected our hello: the job secret (or psdp version) "
                         "differs from the root's",
                         addr.toString()));
  }
  if (answer.value().type == static_cast<uint16_t>(FrameType::kError)) {
    auto body = readBody(socket, answer.value(), handshake);
    return decided(body.isOk() ? bootstrap::decodeErrorBody(body.value()) : body.status());
  }
  return Attempt{Attempt::Kind::kAccepted, std::move(socket), Status::ok()};
}

// Connects to the root and has the hello accepted, retrying with backoff until the deadline.
Result<Socket> findRoot(const RendezvousId& id, bootstrap::Hello& hello, const Config& config, const Deadline& deadline,
                        const Logger& log) {
  bool scanning = id.port == 0;
  if (scanning && config.port_range.lo == 0) {
    return Status::invalidArgument("the rendezvous address {} names no port and PSDP_PORT_RANGE is empty", id.host);
  }
  int lo = scanning ? config.port_range.lo : id.port;
  int hi = scanning ? config.port_range.hi : id.port;
  std::string where =
      lo == hi ? formatHostPort(id.host, static_cast<uint16_t>(lo)) : fmt::format("{} ports {}-{}", id.host, lo, hi);
  double total_s = deadline.remainingSeconds();
  double backoff_s = kFirstBackoffS;
  Status last = Status::timeout("no attempt was made");
  for (int pass = 0;; ++pass) {
    for (int port = lo; port <= hi && !deadline.expired(); ++port) {
      PSDP_ASSIGN_OR_RETURN(SockAddr addr, SockAddr::numeric(id.host, static_cast<uint16_t>(port)));
      Attempt attempt = tryRoot(addr, hello, scanning, deadline);
      if (attempt.kind == Attempt::Kind::kAccepted) {
        if (log) {
          log->debug("bootstrap: rank {} of {} accepted by the root at {}", hello.rank, hello.nranks, addr.toString());
        }
        return std::move(attempt.socket);
      }
      if (attempt.kind == Attempt::Kind::kFinal) return attempt.status.withContext("rendezvous at " + where);
      last = std::move(attempt.status);
    }
    if (deadline.expired()) break;
    if (log && pass == 0) log->debug("bootstrap: no root at {} yet ({}), retrying", where, last.message());
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(backoff_s, deadline.remainingSeconds())));
    backoff_s = std::min(backoff_s * 2, kMaxBackoffS);
  }
  return Status::timeout("no bootstrap root accepted rank {} at {} within {:g} s (last attempt: {})", hello.rank, where,
                         total_s, last.message());
}

// After the root accepted us: the table, or the error the root decided on.
Result<bootstrap::Table> awaitTable(Socket& socket, const std::string& where, int nranks, const Deadline& deadline) {
  double total_s = deadline.remainingSeconds();
  // Why the bytes stopped: our deadline, or the root's process (rank 0's) going away without a word.
  auto lost = [&](const Status& s) {
    if (s.code() == PSDP_ERR_TIMEOUT) {
      return Status::timeout(
          "rendezvous at {}: no table from the root within {:g} s (it did not say which ranks are missing)", where,
          total_s);
    }
    return Status::remote(
        "rendezvous at {}: the bootstrap root (rank 0's process) went away before sending the table: {}", where,
        s.message());
  };
  std::array<std::byte, bootstrap::kHeaderBytes> bytes{};
  Status got = socket.recvAll(bytes, deadline);
  if (!got.isOk()) return lost(got);
  const bootstrap::FrameHeader header = bootstrap::decodeHeader(bytes);
  std::string bad = bootstrap::checkHeader(header, FrameType::kTable, FrameType::kError,
                                           bootstrap::maxTableBodyBytes(nranks), bootstrap::kMaxErrorBodyBytes);
  if (!bad.empty()) return Status::remote("rendezvous at {}: not a psdp bootstrap root: {}", where, bad);
  Result<std::vector<std::byte>> body = readBody(socket, header, deadline);
  if (!body.isOk()) return lost(body.status());
  if (header.type == static_cast<uint16_t>(FrameType::kError)) {
    return bootstrap::decodeErrorBody(body.value()).withContext("rendezvous at " + where);
  }
  auto table = bootstrap::decodeTableBody(body.value(), nranks);
  if (!table.isOk()) return Status::remote("rendezvous at {}: malformed table: {}", where, table.status().message());
  return table;
}

}  // namespace

Result<std::vector<std::vector<std::byte>>> exchangeViaRoot(const RendezvousId& id, int rank, int nranks,
                                                            std::span<const std::byte> payload, const Config& config,
                                                            const Deadline& deadline, const Logger& log) {
  if (nranks < 1 || nranks > bootstrap::kMaxRanks || rank < 0 || rank >= nranks) {
    return Status::invalidArgument("rank {} and nranks {} are not 0 <= rank < nranks <= {}", rank, nranks,
                                   bootstrap::kMaxRanks);
  }
  if (payload.size() > bootstrap::kMaxPayloadBytes) {
    return Status::invalidArgument("bootstrap payload of {} bytes exceeds {}", payload.size(),
                                   bootstrap::kMaxPayloadBytes);
  }
  bootstrap::Hello hello;
  hello.secret = id.secret;
  hello.rank = static_cast<uint32_t>(rank);
  hello.nranks = static_cast<uint32_t>(nranks);
  hello.payload.assign(payload.begin(), payload.end());
  PSDP_ASSIGN_OR_RETURN(Socket socket, findRoot(id, hello, config, deadline, log));
  // The port we found, when we scanned for it, says more than the id's port 0.
  auto peer = peerAddress(socket.fd());
  std::string where = peer.isOk() ? peer.value().toString() : id.address();
  PSDP_ASSIGN_OR_RETURN(bootstrap::Table table, awaitTable(socket, where, nranks, deadline));
  const auto& mine = table[static_cast<size_t>(rank)];
  if (!std::equal(mine.begin(), mine.end(), payload.begin(), payload.end())) {
    return Status::remote("rendezvous at {}: the root's table does not hold our own payload", where);
  }
  if (log) log->debug("bootstrap: rank {} received the table of {} ranks from {}", rank, nranks, where);
  return table;
}

}  // namespace psdp::core
