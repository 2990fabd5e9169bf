// Output of the ranks: each rank's stdout and stderr arrive on pipes and leave psdp-run line by line, each
// line prefixed with "[<rank>] ", so that lines of different ranks never mix.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace psdp::run {

// Writes all of data to fd, retrying on EINTR, short writes and EAGAIN (an inherited O_NONBLOCK stdout).
// Returns false on any other error, e.g. EPIPE when whoever reads psdp-run's output went away.
[[nodiscard]] bool writeAll(int fd, std::string_view data);

// Turns the byte stream of one rank's stdout or stderr into prefixed lines on out_fd (not owned).
// Lines longer than kMaxLineBytes are cut into pieces of that size, each written as a line of its own, so a rank
// that never writes a newline cannot make the launcher buffer without bound. Not thread safe; psdp-run has one
// thread.
class LinePrefixer {
 public:
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  LinePrefixer(int rank, int out_fd);

  // Writes every line that data completes; keeps the rest until more data or finish().
  void append(std::string_view data);
  // At end of stream: writes a partial last line, completed with a newline so the next line starts clean.
  void finish();

 private:
  void addPendingLine();
  void flush();

  std::string prefix_;
  int out_fd_;
  std::string pending_;  // the current line so far, never longer than kMaxLineBytes
  std::string batch_;    // whole prefixed lines of one append(), written with one write()
  bool broken_ = false;  // out_fd_ failed: drop output from now on, but keep draining the rank's pipe
};

}  // namespace psdp::run
