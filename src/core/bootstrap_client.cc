// The client side of the bootstrap: find the root (retrying while it is not up yet, scanning the port
// range when the id names no port), have it prove it holds the job secret, say hello, wait for the table.
#include <algorithm>
#include <chrono>
#include <set>
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

// A connection to the root that proved it holds the job secret and accepted our hello.
struct RootSession {
  Socket socket;
  bootstrap::SessionNonces nonces;
};

// One attempt at one port: a session, the root's verdict (an error frame, or a failed proof on a port we
// were told to use), or "nobody suitable there" with the reason.
struct Attempt {
  enum class Kind { kAccepted, kAbsent, kFinal } kind = Kind::kAbsent;
  RootSession session;
  Status status;          // kAbsent: why; kFinal: the error to return
  bool impostor = false;  // kAbsent: a listener that speaks the protocol but failed to prove the secret
};

Attempt absent(Status why, bool impostor = false) {
  Attempt out;
  out.status = std::move(why);
  out.impostor = impostor;
  return out;
}
Attempt decided(Status status) {
  Attempt out;
  out.kind = Attempt::Kind::kFinal;
  out.status = std::move(status);
  return out;
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

// A sealed frame whose MAC verified: its type and what follows the MAC.
struct Sealed {
  FrameType type = FrameType::kError;
  std::vector<std::byte> rest;
};

// Reads a sealed frame of type `a` or `b` and checks its MAC. Errors: those of the socket, remote (not a
// psdp frame of those types), mismatch (the MAC does not verify).
Result<Sealed> readSealed(Socket& socket, FrameType a, FrameType b, uint64_t max_a, uint64_t max_b,
                          const JobSecret& secret, const bootstrap::SessionNonces& nonces, const Deadline& deadline) {
  PSDP_ASSIGN_OR_RETURN(bootstrap::FrameHeader header, readHeader(socket, a, b, max_a, max_b, deadline));
  PSDP_ASSIGN_OR_RETURN(std::vector<std::byte> body, readBody(socket, header, deadline));
  const auto type = static_cast<FrameType>(header.type);
  Result<std::span<const std::byte>> rest = bootstrap::openSealed(type, body, secret, nonces);
  if (rest.isOk()) return Sealed{type, std::vector<std::byte>(rest.value().begin(), rest.value().end())};
  if (rest.status().code() == PSDP_ERR_MISMATCH) return rest.status();
  return Status::remote("{}", rest.status().message());
}

uint32_t waitMs(const Deadline& deadline) {
  if (deadline.isNever()) return UINT32_MAX;
  return static_cast<uint32_t>(std::min(deadline.remainingSeconds() * 1000.0, double{UINT32_MAX - 1}));
}

// The handshake: the root's nonce, ours, the root's proof that it holds the secret; only then our hello,
// sealed with the secret, and the root's sealed verdict. Nothing that depends on the secret leaves this
// process before the root's proof verified.
Attempt tryRoot(const SockAddr& addr, const JobSecret& secret, bootstrap::Hello& hello, bool scanning,
                const Deadline& deadline) {
  auto connected = Socket::connect(addr, deadline.min(Deadline::after(kConnectTimeoutS)));
  if (!connected.isOk()) return absent(connected.status());
  RootSession session{std::move(connected).value(), {}};
  Socket& socket = session.socket;
  Deadline handshake = deadline.min(Deadline::after(scanning ? kScanHandshakeTimeoutS : kFixedHandshakeTimeoutS));
  auto server_hello = readHeader(socket, FrameType::kServerHello, FrameType::kServerHello, bootstrap::kNonceBytes,
                                 bootstrap::kNonceBytes, handshake);
  if (!server_hello.isOk()) return absent(server_hello.status());
  auto server_hello_body = readBody(socket, server_hello.value(), handshake);
  if (!server_hello_body.isOk()) return absent(server_hello_body.status());
  auto root_nonce = bootstrap::decodeNonceBody(server_hello_body.value());
  if (!root_nonce.isOk()) return absent(Status::remote("not a psdp bootstrap root: {}", root_nonce.status().message()));
  auto client_nonce = bootstrap::freshNonce();
  if (!client_nonce.isOk()) return decided(client_nonce.status());
  session.nonces = {root_nonce.value(), client_nonce.value()};
  Status sent = socket.sendAll(bootstrap::encodeChallenge(client_nonce.value()), handshake);
  if (!sent.isOk()) return absent(sent);
  auto proof = readSealed(socket, FrameType::kRootProof, FrameType::kRootProof, bootstrap::kMacBytes,
                          bootstrap::kMacBytes, secret, session.nonces, handshake);
  if (!proof.isOk()) {
    if (proof.status().code() != PSDP_ERR_MISMATCH) return absent(proof.status());
    Status impostor = Status::mismatch(
        "the bootstrap root at {} could not prove it holds our job secret: it is the root of another job, or an "
        "impostor; it was told nothing",
        addr.toString());
    return scanning ? absent(std::move(impostor), /*impostor=*/true) : decided(std::move(impostor));
  }
  hello.wait_ms = waitMs(deadline);
  auto sealed_hello =
      bootstrap::encodeSealed(FrameType::kHello, secret, session.nonces, bootstrap::encodeHelloRest(hello));
  if (!sealed_hello.isOk()) return decided(sealed_hello.status());
  sent = socket.sendAll(sealed_hello.value(), handshake);
  if (!sent.isOk()) return absent(sent);
  auto answer = readSealed(socket, FrameType::kAccepted, FrameType::kError, bootstrap::kMacBytes,
                           bootstrap::kMaxErrorBodyBytes, secret, session.nonces, handshake);
  if (!answer.isOk()) {
    // A root that proved itself drops a hello only when it is evicting idle connections or closing: try
    // again. A verdict that fails its MAC was altered on the way, which no retry mends.
    if (answer.status().code() != PSDP_ERR_MISMATCH) return absent(answer.status());
    return decided(Status::remote("the answer to our hello from the bootstrap root at {} fails its integrity check",
                                  addr.toString()));
  }
  if (answer.value().type == FrameType::kError) return decided(bootstrap::decodeErrorRest(answer.value().rest));
  return Attempt{Attempt::Kind::kAccepted, std::move(session), Status::ok(), false};
}

// Connects to the root and has the hello accepted, retrying with backoff until the deadline. A listener in
// the range that fails the root's proof is warned about once (a root of another job sharing the range, or
// an impostor squatting on it) and skipped.
Result<RootSession> findRoot(const RendezvousId& id, bootstrap::Hello& hello, const Config& config,
                             const Deadline& deadline, const Logger& log) {
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
  std::set<int> impostors_named;
  for (int pass = 0;; ++pass) {
    for (int port = lo; port <= hi && !deadline.expired(); ++port) {
      PSDP_ASSIGN_OR_RETURN(SockAddr addr, SockAddr::numeric(id.host, static_cast<uint16_t>(port)));
      Attempt attempt = tryRoot(addr, id.secret, hello, scanning, deadline);
      if (attempt.kind == Attempt::Kind::kAccepted) {
        if (log) {
          log->debug("bootstrap: rank {} of {} accepted by the root at {}", hello.rank, hello.nranks, addr.toString());
        }
        return std::move(attempt.session);
      }
      if (attempt.kind == Attempt::Kind::kFinal) return attempt.status.withContext("rendezvous at " + where);
      if (attempt.impostor && log && impostors_named.insert(port).second) {
        log->warn("bootstrap: rank {}: {}", hello.rank, attempt.status.message());
      }
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

// After the root accepted us: the table, or the error the root decided on, each checked to come from the
// root of this session.
Result<bootstrap::Table> awaitTable(RootSession& session, const JobSecret& secret, const std::string& where, int nranks,
                                    const Deadline& deadline) {
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
  Socket& socket = session.socket;
  std::array<std::byte, bootstrap::kHeaderBytes> bytes{};
  Status got = socket.recvAll(bytes, deadline);
  if (!got.isOk()) return lost(got);
  const bootstrap::FrameHeader header = bootstrap::decodeHeader(bytes);
  std::string bad = bootstrap::checkHeader(header, FrameType::kTable, FrameType::kError,
                                           bootstrap::maxTableBodyBytes(nranks), bootstrap::kMaxErrorBodyBytes);
  if (!bad.empty()) return Status::remote("rendezvous at {}: not a psdp bootstrap root: {}", where, bad);
  Result<std::vector<std::byte>> body = readBody(socket, header, deadline);
  if (!body.isOk()) return lost(body.status());
  const auto type = static_cast<FrameType>(header.type);
  Result<std::span<const std::byte>> rest = bootstrap::openSealed(type, body.value(), secret, session.nonces);
  if (!rest.isOk()) {
    return Status::remote(
        "rendezvous at {}: the {} from the bootstrap root fails its integrity check ({}): it was not built by this "
        "job's root, or was altered on the way",
        where, type == FrameType::kTable ? "table" : "error", rest.status().message());
  }
  if (type == FrameType::kError) return bootstrap::decodeErrorRest(rest.value()).withContext("rendezvous at " + where);
  auto table = bootstrap::decodeTableRest(rest.value(), nranks);
  if (!table.isOk()) {
    return Status::remote("rendezvous at {}: malformed table from the bootstrap root: {}", where,
                          table.status().message());
  }
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
  hello.rank = static_cast<uint32_t>(rank);
  hello.nranks = static_cast<uint32_t>(nranks);
  hello.payload.assign(payload.begin(), payload.end());
  PSDP_ASSIGN_OR_RETURN(RootSession session, findRoot(id, hello, config, deadline, log));
  // The port we found, when we scanned for it, says more than the id's port 0.
  auto peer = peerAddress(session.socket.fd());
  std::string where = peer.isOk() ? peer.value().toString() : id.address();
  PSDP_ASSIGN_OR_RETURN(bootstrap::Table table, awaitTable(session, id.secret, where, nranks, deadline));
  const auto& mine = table[static_cast<size_t>(rank)];
  if (!std::equal(mine.begin(), mine.end(), payload.begin(), payload.end())) {
    return Status::remote("rendezvous at {}: the root's table does not hold our own payload", where);
  }
  if (log) log->debug("bootstrap: rank {} received the table of {} ranks from {}", rank, nranks, where);
  return table;
}

}  // namespace psdp::core
