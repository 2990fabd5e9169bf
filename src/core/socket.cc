#include "core/socket.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>

namespace psdp::core {
namespace {

// Errors that mean "the peer is not there (yet) or went away", as opposed to a local failure.
bool isPeerError(int err) {
  switch (err) {
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
    case ENETDOWN:
    case ETIMEDOUT:
    case EPIPE: return true;
    default: return false;
  }
}

Status errnoStatus(int err, std::string_view what) {
  Status status = Status::fromErrno(err, what);
  return isPeerError(err) ? Status::remote("{}", status.message()) : status;
}

// Waits until `fd` is ready for `events` or the deadline passes. Errors: timeout, system.
Status waitReady(int fd, short events, const Deadline& deadline) {
  for (;;) {
    if (deadline.expired()) return Status::timeout("no progress on the socket before the deadline");
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, deadline.remainingMs());
    if (n > 0) return Status::ok();
    if (n < 0 && errno != EINTR) return Status::fromErrno(errno, "poll");
  }
}

}  // namespace

Status prepareFd(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return Status::fromErrno(errno, "fcntl(O_NONBLOCK)");
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) return Status::fromErrno(errno, "fcntl(FD_CLOEXEC)");
  int one = 1;
  // Not fatal: a socket that is not TCP (socketpair in tests) has no Nagle to turn off.
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return Status::ok();
}

Socket::Socket(UniqueFd fd) : fd_(std::move(fd)) {
  if (fd_.valid() && !prepareFd(fd_.get()).isOk()) fd_.reset();
}

Result<Socket> Socket::connect(const SockAddr& addr, const Deadline& deadline) {
  UniqueFd fd(::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::fromErrno(errno, "socket");
  PSDP_RETURN_IF_ERROR(prepareFd(fd.get()));
  if (::connect(fd.get(), addr.get(), addr.size()) != 0) {
    if (errno != EINPROGRESS && errno != EINTR) return errnoStatus(errno, "connect " + addr.toString());
    PSDP_RETURN_IF_ERROR(waitReady(fd.get(), POLLOUT, deadline));
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) return Status::fromErrno(errno, "getsockopt");
    if (err != 0) return errnoStatus(err, "connect " + addr.toString());
  }
  Socket out;
  out.fd_ = std::move(fd);
  return out;
}

Status Socket::sendAll(std::span<const std::byte> data, const Deadline& deadline) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd_.get(), data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      PSDP_RETURN_IF_ERROR(waitReady(fd_.get(), POLLOUT, deadline));
    } else if (errno != EINTR) {
      return errnoStatus(errno, "send");
    }
  }
  return Status::ok();
}

Status Socket::recvAll(std::span<std::byte> data, const Deadline& deadline) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::recv(fd_.get(), data.data() + done, data.size() - done, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n == 0) {
      return Status::remote("connection closed by the peer after {} of {} bytes", done, data.size());
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      PSDP_RETURN_IF_ERROR(waitReady(fd_.get(), POLLIN, deadline));
    } else if (errno != EINTR) {
      return errnoStatus(errno, "recv");
    }
  }
  return Status::ok();
}

Result<UniqueFd> listenOn(const SockAddr& addr, int* err) {
  auto fail = [err](int e, std::string_view what) {
    if (err != nullptr) *err = e;
    return Status::fromErrno(e, what);
  };
  UniqueFd fd(::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fail(errno, "socket");
  // Lets a new job bind a port whose previous owner left connections in TIME_WAIT; it does not let two
  // live listeners share a port on Linux.
  int one = 1;
  if (setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) return fail(errno, "SO_REUSEADDR");
  if (::bind(fd.get(), addr.get(), addr.size()) != 0) return fail(errno, "bind " + addr.toString());
  if (::listen(fd.get(), SOMAXCONN) != 0) return fail(errno, "listen " + addr.toString());
  return fd;
}

UniqueFd adoptInheritedListener(int fd, const SockAddr& expected, std::string* why) {
  static std::atomic<bool> adopted{false};
  if (fd < 0) {
    *why = "not an fd";
    return UniqueFd();
  }
  struct stat st {};
  int listening = 0;
  socklen_t len = sizeof(listening);
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
      ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0) {
    *why = "not a listening socket";
    return UniqueFd();
  }
  auto local = localAddress(fd);
  if (!local.isOk() || local.value().toString() != expected.toString()) {
    *why = "bound to " + (local.isOk() ? local.value().toString() : std::string("an unknown address")) + ", not " +
           expected.toString();
    return UniqueFd();
  }
  if (adopted.exchange(true)) {
    *why = "an inherited listener was already adopted by this process";
    return UniqueFd();
  }
  Status prepared = prepareFd(fd);
  if (!prepared.isOk()) {
    *why = prepared.message();
    return UniqueFd();
  }
  return UniqueFd(fd);
}

Result<SockAddr> localAddress(int fd) {
  sockaddr_storage storage{};
  socklen_t len = sizeof(storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &len) != 0) return Status::fromErrno(errno, "getsockname");
  return SockAddr::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), len);
}

Result<SockAddr> peerAddress(int fd) {
  sockaddr_storage storage{};
  socklen_t len = sizeof(storage);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &len) != 0) return Status::fromErrno(errno, "getpeername");
  return SockAddr::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), len);
}

}  // namespace psdp::core
