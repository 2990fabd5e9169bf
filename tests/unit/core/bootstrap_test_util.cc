#include "unit/core/bootstrap_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "base/log.h"
#include "core/bootstrap_protocol.h"

namespace psdp::core::testing {

Config loopbackConfig() {
  Config config = Config::defaults();
  config.timeout_s = 10;
  config.socket_ifname = "lo";
  config.port_range = PortRange{};
  return config;
}

std::vector<std::byte> payloadFor(int rank) {
  std::vector<std::byte> out(static_cast<size_t>(rank) * 13);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>((rank * 31 + i * 7) & 0xff);
  return out;
}

namespace {

// A /proc/net/tcp{,6} address: 8 or 32 hex digits, each 32-bit word printed in host byte order.
std::string procAddress(const std::string& hex, int family) {
  unsigned char bytes[16] = {};
  size_t words = hex.size() / 8;
  for (size_t w = 0; w < words && w < 4; ++w) {
    uint32_t word = static_cast<uint32_t>(std::stoul(hex.substr(w * 8, 8), nullptr, 16));
    std::memcpy(bytes + w * 4, &word, sizeof(word));
  }
  char text[INET6_ADDRSTRLEN] = {};
  return inet_ntop(family, bytes, text, sizeof(text)) != nullptr ? text : "unparsable " + hex;
}

}  // namespace

std::vector<std::string> listenersOn(uint16_t port) {
  constexpr const char* kListen = "0A";  // TCP_LISTEN in the st column
  std::vector<std::string> found;
  for (auto [path, family] : {std::pair{"/proc/net/tcp", AF_INET}, std::pair{"/proc/net/tcp6", AF_INET6}}) {
    std::ifstream table(path);
    std::string line;
    std::getline(table, line);  // header: sl local_address rem_address st ...
    while (std::getline(table, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      if (!(fields >> slot >> local >> remote >> state) || state != kListen) continue;
      size_t colon = local.find(':');
      if (colon == std::string::npos || std::stoul(local.substr(colon + 1), nullptr, 16) != port) continue;
      found.push_back(procAddress(local.substr(0, colon), family));
    }
  }
  return found;
}

std::vector<RankSpec> jobOf(int nranks, const JobSecret& secret) {
  std::vector<RankSpec> specs;
  for (int r = 0; r < nranks; ++r) specs.push_back(RankSpec{r, nranks, secret, 0});
  return specs;
}

std::vector<Result<Table>> runRanks(const std::string& host, uint16_t port, const std::vector<RankSpec>& specs,
                                    const Config& config, double timeout_s, std::shared_ptr<spdlog::sinks::sink> sink) {
  std::vector<Result<Table>> results(specs.size(), Result<Table>(Status::internal("rank thread did not run")));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < specs.size(); ++i) {
    threads.emplace_back([&, i] {
      const RankSpec& spec = specs[i];
      RendezvousId id{host, spec.port != 0 ? spec.port : port, spec.secret};
      auto log = makeRankLogger(spec.rank, config);
      if (log.isOk() && sink) log.value()->sinks().push_back(sink);
      results[i] = exchangeViaRoot(id, spec.rank, spec.nranks, payloadFor(spec.rank), config,
                                   Deadline::after(timeout_s), log.isOk() ? log.value() : nullptr);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

Result<RawClient> RawClient::connect(uint16_t port, int rcvbuf) {
  PSDP_ASSIGN_OR_RETURN(SockAddr addr, SockAddr::numeric("127.0.0.1", port));
  RawClient client;
  if (rcvbuf == 0) {
    PSDP_ASSIGN_OR_RETURN(client.socket_, Socket::connect(addr, Deadline::after(5)));
    return client;
  }
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::fromErrno(errno, "socket");
  if (setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) != 0) {
    return Status::fromErrno(errno, "SO_RCVBUF");
  }
  // Loopback's 64 KiB segments would let the root's send buffer grow to megabytes at once (Linux sizes
  // it from the segment size); a small segment keeps it small.
  int mss = 536;
  if (setsockopt(fd.get(), IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof(mss)) != 0)
    return Status::fromErrno(errno, "TCP_MAXSEG");
  // Blocking is fine: a loopback connect to a listening socket completes at once.
  if (::connect(fd.get(), addr.get(), addr.size()) != 0) return Status::fromErrno(errno, "connect");
  client.socket_ = Socket(std::move(fd));
  return client;
}

Status RawClient::readServerHello() {
  PSDP_ASSIGN_OR_RETURN(auto frame, readFrame(socket_, bootstrap::kNonceBytes, Deadline::after(5)));
  if (frame.header.type != static_cast<uint16_t>(bootstrap::FrameType::kServerHello)) {
    return Status::remote("frame type {}", frame.header.type);
  }
  PSDP_ASSIGN_OR_RETURN(nonces_.root, bootstrap::decodeNonceBody(frame.body()));
  return Status::ok();
}

Status RawClient::handshake(const JobSecret& secret) {
  PSDP_RETURN_IF_ERROR(readServerHello());
  PSDP_ASSIGN_OR_RETURN(nonces_.client, bootstrap::freshNonce());
  PSDP_RETURN_IF_ERROR(send(bootstrap::encodeChallenge(nonces_.client)));
  PSDP_ASSIGN_OR_RETURN(auto proof, readFrame(socket_, bootstrap::kMacBytes, Deadline::after(5)));
  if (proof.header.type != static_cast<uint16_t>(bootstrap::FrameType::kRootProof)) {
    return Status::remote("frame type {}", proof.header.type);
  }
  return bootstrap::openSealed(bootstrap::FrameType::kRootProof, proof.body(), secret, nonces_).status();
}

Status RawClient::sendHello(const JobSecret& secret, int rank, int nranks, std::vector<std::byte> payload) {
  bootstrap::Hello hello;
  hello.rank = static_cast<uint32_t>(rank);
  hello.nranks = static_cast<uint32_t>(nranks);
  hello.wait_ms = UINT32_MAX;
  hello.payload = std::move(payload);
  PSDP_ASSIGN_OR_RETURN(bootstrap::Frame frame, bootstrap::encodeSealed(bootstrap::FrameType::kHello, secret, nonces_,
                                                                        bootstrap::encodeHelloRest(hello)));
  return send(frame);
}

Status RawClient::send(std::span<const std::byte> bytes) {
  return socket_.sendAll(bytes, Deadline::after(5));
}

Result<uint16_t> RawClient::readFrameType() {
  PSDP_ASSIGN_OR_RETURN(auto frame, readFrame(socket_, uint64_t{1} << 26, Deadline::after(5)));
  return frame.header.type;
}

bool RawClient::closedWithin(double seconds) {
  Deadline deadline = Deadline::after(seconds);
  std::array<std::byte, 1> byte{};
  for (;;) {
    Status s = socket_.recvAll(byte, deadline);
    if (s.code() == PSDP_ERR_REMOTE) return true;
    if (!s.isOk()) return false;
  }
}

Result<LoopbackListener> LoopbackListener::open() {
  LoopbackListener out;
  PSDP_ASSIGN_OR_RETURN(SockAddr any_port, SockAddr::numeric("127.0.0.1", 0));
  PSDP_ASSIGN_OR_RETURN(out.fd_, listenOn(any_port));
  PSDP_ASSIGN_OR_RETURN(SockAddr bound, localAddress(out.fd_.get()));
  out.port_ = bound.port();
  return out;
}

Result<Socket> LoopbackListener::accept(double seconds) {
  pollfd pfd{fd_.get(), POLLIN, 0};
  if (::poll(&pfd, 1, static_cast<int>(seconds * 1000)) != 1) return Status::timeout("no connection");
  UniqueFd fd(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd.valid()) return Status::fromErrno(errno, "accept");
  return Socket(std::move(fd));
}

Result<RawFrame> readFrame(Socket& socket, uint64_t max_body, const Deadline& deadline) {
  RawFrame frame;
  frame.bytes.resize(bootstrap::kHeaderBytes);
  PSDP_RETURN_IF_ERROR(socket.recvAll(frame.bytes, deadline));
  frame.header = bootstrap::decodeHeader(std::span<const std::byte, bootstrap::kHeaderBytes>(frame.bytes));
  if (frame.header.body_bytes > max_body) return Status::remote("frame body of {} bytes", frame.header.body_bytes);
  frame.bytes.resize(bootstrap::kHeaderBytes + frame.header.body_bytes);
  PSDP_RETURN_IF_ERROR(socket.recvAll(std::span(frame.bytes).subspan(bootstrap::kHeaderBytes), deadline));
  return frame;
}

Result<bootstrap::SessionNonces> serveHandshake(Socket& socket, const JobSecret& secret, const Deadline& deadline) {
  bootstrap::SessionNonces nonces;
  PSDP_ASSIGN_OR_RETURN(nonces.root, bootstrap::freshNonce());
  PSDP_RETURN_IF_ERROR(socket.sendAll(bootstrap::encodeServerHello(nonces.root), deadline));
  PSDP_ASSIGN_OR_RETURN(auto challenge, readFrame(socket, bootstrap::kNonceBytes, deadline));
  PSDP_ASSIGN_OR_RETURN(nonces.client, bootstrap::decodeNonceBody(challenge.body()));
  PSDP_ASSIGN_OR_RETURN(bootstrap::Frame proof,
                        bootstrap::encodeSealed(bootstrap::FrameType::kRootProof, secret, nonces, {}));
  PSDP_RETURN_IF_ERROR(socket.sendAll(proof, deadline));
  return nonces;
}

}  // namespace psdp::core::testing
