// Runs one psdp-run job: starts the ranks, relays their output, watches their exits, the timeout and the signals
// psdp-run receives, and decides psdp-run's exit code.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/raii.h"
#include "psdp_run_job.h"
#include "psdp_run_options.h"
#include "psdp_run_output.h"

namespace psdp::run {

class Launcher {
 public:
  // How long ranks, and the children a rank leaves behind, get between SIGTERM and SIGKILL; and how long output
  // pipes may stay open after the last rank was reaped (a grandchild that left the rank's process group can hold
  // them).
  static constexpr std::chrono::milliseconds kGrace{2000};

  // program: the resolved path to execute; options.command[0] stays the ranks' argv[0]. options and env must
  // outlive the Launcher.
  Launcher(const RunOptions& options, JobEnvironment& env, std::string program);
  // Kills and reaps any rank not reaped yet (only reachable if run() did not complete).
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // Runs the job to its end and returns psdp-run's exit code; returns only after every rank was reaped.
  // REQUIRES: the process has a single thread (signals are taken through a signalfd, and fork must be safe).
  // Blocks SIGCHLD, SIGINT, SIGTERM, SIGHUP and SIGQUIT and ignores SIGPIPE while it runs.
  int run();

 private:
  using Clock = std::chrono::steady_clock;

  struct Stream {
    UniqueFd fd;  // read end of the rank's pipe; invalid once drained
    LinePrefixer lines;
  };
  // A rank's life: kRunning until its process exits; then kExited, a zombie the launcher holds on purpose so that
  // its pid, which is also its process group id, cannot be reused while the launcher still signals that group
  // (children the rank left behind get SIGTERM at once and SIGKILL when the zombie is released); kReaped at last.
  enum class State { kNotStarted, kRunning, kExited, kReaped };
  struct Rank {
    explicit Rank(int i) : index(i), out{UniqueFd(), LinePrefixer(i, 1)}, err{UniqueFd(), LinePrefixer(i, 2)} {}
    int index;
    State state = State::kNotStarted;
    pid_t pid = -1;                      // also its process group id
    int last_signal = 0;                 // what the launcher last sent to its group; 0: its death would be news
    Clock::time_point release_deadline;  // kExited: reap by then even if its output pipes are still open
    Stream out;
    Stream err;
  };

  [[nodiscard]] bool setUp();
  void restoreSignals();
  [[nodiscard]] bool spawnRank(Rank& rank);
  void eventLoop();
  int pollTimeoutMs(Clock::time_point now) const;
  void readStream(Stream& stream);
  void drainSignals();
  void checkExited();
  void onRankExit(Rank& rank, const siginfo_t& info);
  void releaseExited(bool force);
  void handleDeadlines(Clock::time_point now);
  void onTimeout();
  void onInterrupt(int sig);
  void terminateRunning(int sig);
  void killRunning();
  void closeStreams();
  bool anyRunning() const;
  bool anyUnreaped() const;
  bool anyStreamOpen() const;
  int exitCode() const;

  const RunOptions& options_;
  JobEnvironment& env_;
  std::string program_;
  std::vector<std::string> argv_storage_;
  std::vector<char*> argv_;  // null-terminated, pointing into argv_storage_
  std::vector<Rank> ranks_;
  pid_t launcher_pid_ = -1;
  UniqueFd dev_null_;
  UniqueFd signal_fd_;
  bool signals_changed_ = false;
  sigset_t saved_mask_{};
  struct sigaction saved_sigpipe_ {};
  struct sigaction saved_sigchld_ {};

  std::optional<Clock::time_point> job_deadline_;    // --timeout
  std::optional<Clock::time_point> kill_deadline_;   // SIGKILL whatever still runs after a SIGTERM
  std::optional<Clock::time_point> drain_deadline_;  // stop waiting for output once every rank is gone
  int launch_error_ = 0;                             // exit code when the launcher itself failed
  int first_failure_ = 0;
  int interrupt_signal_ = 0;
  bool timed_out_ = false;
  std::vector<pollfd> pollfds_;
  std::vector<Stream*> poll_streams_;  // poll_streams_[i] belongs to pollfds_[i + 1]; [0] is the signalfd
  std::vector<char> read_buf_;
};

}  // namespace psdp::run
