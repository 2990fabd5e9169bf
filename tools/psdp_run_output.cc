#include "psdp_run_output.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace psdp::run {

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n >= 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    // psdp-run's stdout may be non-blocking (shared with a program that set O_NONBLOCK on it): wait, don't drop.
    pollfd pfd{fd, POLLOUT, 0};
    if (::poll(&pfd, 1, -1) < 0 && errno != EINTR) return false;
  }
  return true;
}

LinePrefixer::LinePrefixer(int rank, int out_fd) : prefix_("[" + std::to_string(rank) + "] "), out_fd_(out_fd) {}

// Each pass takes either a whole line (up to a newline that fits in the room left) or fills the pending line up to
// kMaxLineBytes and emits it as a cut line; the remainder waits in pending_.
void LinePrefixer::append(std::string_view data) {
  while (!data.empty()) {
    size_t room = kMaxLineBytes - pending_.size();
    size_t newline = data.find('\n');
    if (newline != std::string_view::npos && newline <= room) {
      pending_.append(data.substr(0, newline));
      addPendingLine();
      data.remove_prefix(newline + 1);
    } else if (data.size() < room) {
      pending_.append(data);
      break;
    } else {
      pending_.append(data.substr(0, room));
      addPendingLine();
      data.remove_prefix(room);
    }
  }
  flush();
}

void LinePrefixer::finish() {
  if (!pending_.empty()) addPendingLine();
  flush();
}

void LinePrefixer::addPendingLine() {
  batch_ += prefix_;
  batch_ += pending_;
  batch_ += '\n';
  pending_.clear();
}

void LinePrefixer::flush() {
  if (!broken_ && !batch_.empty()) broken_ = !writeAll(out_fd_, batch_);
  batch_.clear();
}

}  // namespace psdp::run
