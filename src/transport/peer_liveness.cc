#include "transport/peer_liveness.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace psdp::transport {
namespace {

int pidfdOpen(uint32_t pid) {
  // Through syscall(): glibc wraps pidfd_open only from 2.36 on.
  return static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
}

}  // namespace

Status PeerLiveness::watch(int peer, const ProcessIdentity& identity) {
  if (!ProcessIdentity::self().isOtherLocalProcess(identity)) return Status::ok();
  UniqueFd fd(pidfdOpen(identity.pid));
  if (!fd.valid()) {
    if (errno == ESRCH) return Status::remote("peer {} (pid {} on this host) has already exited", peer, identity.pid);
    // ENOSYS (kernel before 5.3), EPERM (seccomp): fall back to the transport's own detection.
    return Status::ok();
  }
  watches_.push_back(Watch{peer, identity.pid});
  poll_set_.push_back(pollfd{.fd = fd.get(), .events = POLLIN, .revents = 0});
  fds_.push_back(std::move(fd));
  return Status::ok();
}

std::vector<int> PeerLiveness::activeFds() const {
  std::vector<int> fds;
  for (size_t i = 0; i < watches_.size(); ++i) {
    if (!watches_[i].reported) fds.push_back(fds_[i].get());
  }
  return fds;
}

bool PeerLiveness::pollExited() {
  // One poll over every pidfd: a microsecond or so, and callers rate-limit it.
  for (pollfd& p : poll_set_) p.revents = 0;
  if (poll(poll_set_.data(), poll_set_.size(), 0) <= 0) return false;
  bool any = false;
  for (size_t i = 0; i < poll_set_.size(); ++i) {
    if ((poll_set_[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) watches_[i].exited = true;
    any = any || (watches_[i].exited && !watches_[i].reported);
  }
  return any;
}

}  // namespace psdp::transport
