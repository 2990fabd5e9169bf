// A forked child that plays another process of the host for the peer-memory tests: it writes one report
// to the parent, then waits for one command byte (pipes both ways, no sleeps). Killed and reaped on
// destruction unless finish() reaped it.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>

#include "base/raii.h"

namespace psdp::transport::testing {

class ForkedChild {
 public:
  ForkedChild() = default;
  ForkedChild(const ForkedChild&) = delete;
  ForkedChild& operator=(const ForkedChild&) = delete;
  ~ForkedChild() { kill(); }

  // Forks a child running body(report_fd, command_fd), which must not return (_exit), and reads its report,
  // `bytes` into `report`, waiting at most timeout_ms. False if any of it fails.
  bool start(void (*body)(int report_fd, int command_fd), void* report, size_t bytes, int timeout_ms) {
    int to_parent[2], to_child[2];
    if (pipe2(to_parent, O_CLOEXEC) != 0) return false;
    if (pipe2(to_child, O_CLOEXEC) != 0) {
      close(to_parent[0]);
      close(to_parent[1]);
      return false;
    }
    pid_ = fork();
    if (pid_ == 0) {
      close(to_parent[0]);
      close(to_child[1]);
      body(to_parent[1], to_child[0]);
      _exit(99);
    }
    close(to_parent[1]);
    close(to_child[0]);
    report_fd_.reset(to_parent[0]);
    command_fd_.reset(to_child[1]);
    if (pid_ < 0) return false;
    pollfd p{report_fd_.get(), POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) return false;
    return read(report_fd_.get(), report, bytes) == static_cast<ssize_t>(bytes);
  }

  // Sends `command` and reaps the child: its exit code, or -1 if it did not exit normally.
  int finish(char command) {
    if (write(command_fd_.get(), &command, 1) != 1) return -1;
    int status = 0;
    pid_t reaped = waitpid(pid_, &status, 0);
    pid_ = -1;
    return reaped > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Kills and reaps the child: its pid then names no process.
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
  UniqueFd report_fd_, command_fd_;
};

}  // namespace psdp::transport::testing
