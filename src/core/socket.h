// A TCP socket whose every blocking operation is bounded by a Deadline. The bootstrap never blocks in the
// kernel without a time limit: the fd is non-blocking and waits go through poll().
#pragma once

#include <cstddef>
#include <span>

#include "base/deadline.h"
#include "base/raii.h"
#include "base/status.h"
#include "core/net_address.h"

namespace psdp::core {

class Socket {
 public:
  Socket() = default;
  // Takes ownership of a connected socket and makes it non-blocking.
  explicit Socket(UniqueFd fd);
  Socket(Socket&&) = default;
  Socket& operator=(Socket&&) = default;

  // Connects to `addr`. Errors: remote (refused, unreachable, reset: nobody is listening yet, worth a
  // retry), timeout (no answer by the deadline), system (a local failure such as running out of fds).
  static Result<Socket> connect(const SockAddr& addr, const Deadline& deadline);

  // Sends all of `data`. Errors: remote (the peer closed or reset), timeout, system.
  Status sendAll(std::span<const std::byte> data, const Deadline& deadline);
  // Fills all of `data`. Errors: remote (the peer closed first: the message says how many bytes came),
  // timeout, system.
  Status recvAll(std::span<std::byte> data, const Deadline& deadline);

  bool valid() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  void close() { fd_.reset(); }

 private:
  UniqueFd fd_;
};

// A non-blocking listening socket bound to exactly `addr`. Errors: system; when `err` is not null it
// receives the errno of the failed call, so a caller scanning a port range can tell EADDRINUSE from a real
// failure.
Result<UniqueFd> listenOn(const SockAddr& addr, int* err = nullptr);

// Takes over a listening socket this process inherited (psdp-run binds rank 0's bootstrap port itself and
// hands the socket down, so that no other process can take the port between choosing and binding it).
// Adopted only when `fd` is a listening stream socket bound to exactly `expected`, and only once per
// process: the number may name an unrelated file by the time a second communicator is created. Returns an
// invalid UniqueFd and sets *why otherwise; the fd is then left alone (it is not ours to close).
UniqueFd adoptInheritedListener(int fd, const SockAddr& expected, std::string* why);

// The address a socket is bound to (getsockname) or connected to (getpeername). Errors: system.
Result<SockAddr> localAddress(int fd);
Result<SockAddr> peerAddress(int fd);

// Marks an fd non-blocking and close-on-exec; sets TCP_NODELAY on TCP sockets (the bootstrap sends small
// frames and waits for answers, which Nagle would delay). Errors: system.
Status prepareFd(int fd);

}  // namespace psdp::core
