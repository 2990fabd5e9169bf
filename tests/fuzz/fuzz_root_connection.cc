// The root's reading of one connection, on a byte stream from a peer: the challenge, then the hello, then
// silence. The input goes through a real socket pair in pieces, as the network would deliver it, and the
// connection must end in a frame or a drop, never a crash, an over-read or a frame of the wrong size.
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/bootstrap_protocol.h"
#include "core/root_connection.h"
#include "fuzz_check.h"

using psdp::core::RootConnection;
namespace bootstrap = psdp::core::bootstrap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return 0;
  psdp::UniqueFd peer(fds[1]);
  RootConnection conn(psdp::UniqueFd(fds[0]), "fuzz peer", psdp::Deadline::never());
  size_t sent = 0;
  bool closed = false;
  // Feeding stops once the connection ends; each read gets what the socket holds.
  for (int round = 0; round < 1 << 16; ++round) {
    if (sent < size) {
      ssize_t n = ::send(peer.get(), data + sent, size - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
    } else if (!closed) {
      ::shutdown(peer.get(), SHUT_WR);
      closed = true;
    }
    const RootConnection::ReadOutcome out = conn.read();
    if (out.kind == RootConnection::ReadOutcome::Kind::kDrop) return 0;
    if (out.kind == RootConnection::ReadOutcome::Kind::kWaiting) {
      // Once the peer has closed, every byte is in the socket: waiting for more would be waiting forever.
      PSDP_FUZZ_CHECK(!closed);
      continue;
    }
    if (conn.state == RootConnection::State::kAwaitChallenge) {
      PSDP_FUZZ_CHECK(out.body.size() <= bootstrap::kNonceBytes);
      conn.state = RootConnection::State::kAwaitHello;
    } else if (conn.state == RootConnection::State::kAwaitHello) {
      PSDP_FUZZ_CHECK(out.body.size() <= bootstrap::kMaxHelloBodyBytes);
      conn.state = RootConnection::State::kRegistered;
    } else {
      PSDP_FUZZ_CHECK(false);  // a registered connection yields drops only
    }
  }
  return 0;
}
