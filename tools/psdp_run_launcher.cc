#include "psdp_run_launcher.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

namespace psdp::run {
namespace {

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// psdp-run's own messages: one write per line, so they do not split the ranks' lines.
void note(const std::string& message) {
  (void)writeAll(STDERR_FILENO, "psdp-run: " + message + "\n");
}

std::string errnoText(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

// Everything the child needs between fork and exec, prepared before fork: that stretch may only make
// async-signal-safe calls (no allocation, no locks).
struct ChildSpec {
  const char* program;
  char* const* argv;
  char* const* envp;
  int stdin_fd;
  int stdout_fd;
  int stderr_fd;
  int exec_error_fd;  // close-on-exec: EOF tells the launcher exec worked, an errno tells it why not
  int inherited_fd;   // -1, or a close-on-exec fd this rank alone keeps across exec (rank 0's listener)
  pid_t launcher_pid;
  const sigset_t* mask;
  const struct sigaction* sigpipe;
  const struct sigaction* sigchld;
};

[[noreturn]] void failChild(int exec_error_fd) {
  int error = errno;
  (void)!::write(exec_error_fd, &error, sizeof(error));
  ::_exit(kExitNotFound);
}

[[noreturn]] void execChild(const ChildSpec& spec) {
  // Its own process group: killing the group also reaches what the rank started (the "sleep" under "sh -c"),
  // and a Ctrl-C on the terminal reaches only psdp-run, which forwards it exactly once.
  ::setpgid(0, 0);
  // Die with the launcher even when it is SIGKILLed and cannot clean up; then check it did not die already.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) failChild(spec.exec_error_fd);
  if (::getppid() != spec.launcher_pid) ::_exit(kExitLauncherError);
  if (::dup2(spec.stdin_fd, STDIN_FILENO) < 0 || ::dup2(spec.stdout_fd, STDOUT_FILENO) < 0 ||
      ::dup2(spec.stderr_fd, STDERR_FILENO) < 0) {
    failChild(spec.exec_error_fd);
  }
  if (spec.inherited_fd >= 0 && ::fcntl(spec.inherited_fd, F_SETFD, 0) != 0) failChild(spec.exec_error_fd);
  // Undo what the launcher changed for itself, so the rank starts as if psdp-run were not there.
  ::sigaction(SIGPIPE, spec.sigpipe, nullptr);
  ::sigaction(SIGCHLD, spec.sigchld, nullptr);
  ::sigprocmask(SIG_SETMASK, spec.mask, nullptr);
  ::execve(spec.program, spec.argv, spec.envp);
  failChild(spec.exec_error_fd);
}

bool makePipe(UniqueFd* read_end, UniqueFd* write_end) {
  int fds[2];
  // Close-on-exec, so that no rank inherits another rank's pipe and keeps it from reaching EOF.
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  read_end->reset(fds[0]);
  write_end->reset(fds[1]);
  return true;
}

// The rank normally leads its own process group, and signalling the group reaches its children too. A rank that
// moved itself to another group still gets the signal directly.
void signalRank(pid_t pid, int sig) {
  if (::getpgid(pid) == pid) {
    ::kill(-pid, sig);
    return;
  }
  ::kill(pid, sig);
  ::kill(-pid, sig);
}

// info comes from waitid(WEXITED): si_code is CLD_EXITED, CLD_KILLED or CLD_DUMPED.
int exitCodeOf(const siginfo_t& info) {
  return info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
}

std::string describeExit(int rank, const siginfo_t& info) {
  std::string text = "rank " + std::to_string(rank);
  if (info.si_code == CLD_EXITED) return text + " exited with code " + std::to_string(info.si_status);
  text += " was killed by signal " + std::to_string(info.si_status) + " (" + ::strsignal(info.si_status) + ")";
  return info.si_code == CLD_DUMPED ? text + ", core dumped" : text;
}

}  // namespace

Launcher::Launcher(const RunOptions& options, JobEnvironment& env, std::string program)
    : options_(options), env_(env), program_(std::move(program)), argv_storage_(options.command) {
  for (std::string& arg : argv_storage_) argv_.push_back(arg.data());
  argv_.push_back(nullptr);
  ranks_.reserve(static_cast<size_t>(options.nranks));
  for (int i = 0; i < options.nranks; ++i) ranks_.emplace_back(i);
  read_buf_.resize(64 * 1024);
}

Launcher::~Launcher() {
  // Ranks are left only when run() was cut short: they must not outlive psdp-run.
  killRunning();
  for (Rank& rank : ranks_) {
    if (rank.state == State::kRunning) rank.state = State::kExited;  // SIGKILLed: reaping it cannot block long
  }
  releaseExited(/*force=*/true);
  restoreSignals();
}

int Launcher::run() {
  if (!setUp()) return kExitLauncherError;
  if (options_.timeout_s > 0) {
    job_deadline_ =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.timeout_s));
  }
  for (Rank& rank : ranks_) {
    if (spawnRank(rank)) continue;
    // Ranks already started would wait forever for the missing one: stop them like after a failure.
    terminateRunning(SIGTERM);
    break;
  }
  eventLoop();
  restoreSignals();
  return exitCode();
}

bool Launcher::setUp() {
  launcher_pid_ = ::getpid();
  dev_null_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null_.valid()) {
    note(errnoText("open /dev/null"));
    return false;
  }
  // Signals arrive through a signalfd in the poll loop instead of handlers: no async-signal-safety concerns, and
  // a SIGCHLD cannot slip in between checking and sleeping. Blocked before the first fork, so none is lost.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (int sig : kForwardedSignals) sigaddset(&set, sig);
  ::sigprocmask(SIG_BLOCK, &set, &saved_mask_);
  // SIGCHLD at SIG_IGN (inherited) would make the kernel reap the ranks before we learn their exit codes.
  // SIGPIPE is ignored so that a closed stdout of psdp-run shows up as EPIPE rather than killing the launcher.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGCHLD, &dfl, &saved_sigchld_);
  ::sigaction(SIGPIPE, &ign, &saved_sigpipe_);
  signals_changed_ = true;
  signal_fd_.reset(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signal_fd_.valid()) {
    note(errnoText("signalfd"));
    return false;
  }
  return true;
}

void Launcher::restoreSignals() {
  if (!signals_changed_) return;
  signals_changed_ = false;
  ::sigaction(SIGPIPE, &saved_sigpipe_, nullptr);
  ::sigaction(SIGCHLD, &saved_sigchld_, nullptr);
  ::sigprocmask(SIG_SETMASK, &saved_mask_, nullptr);
}

bool Launcher::spawnRank(Rank& rank) {
  UniqueFd out_r, out_w, err_r, err_w, exec_r, exec_w;
  if (!makePipe(&out_r, &out_w) || !makePipe(&err_r, &err_w) || !makePipe(&exec_r, &exec_w)) {
    note(errnoText("pipe") + " (too many ranks for the open-file limit?)");
    launch_error_ = kExitLauncherError;
    return false;
  }
  std::vector<std::string> env = env_.forRank(rank.index, options_.nranks);
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  int inherited_fd = rank.index == 0 ? env_.rootListenerFd() : -1;
  ChildSpec spec{program_.c_str(), argv_.data(), envp.data(),   dev_null_.get(), out_w.get(),     err_w.get(),
                 exec_w.get(),     inherited_fd, launcher_pid_, &saved_mask_,    &saved_sigpipe_, &saved_sigchld_};
  pid_t pid = ::fork();
  if (pid < 0) {
    note(errnoText("fork"));
    launch_error_ = kExitLauncherError;
    return false;
  }
  if (pid == 0) execChild(spec);
  exec_w.reset();  // now only the child holds the write end: EOF means exec succeeded
  int child_errno = 0;
  ssize_t n = 0;
  do {
    n = ::read(exec_r.get(), &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n == 0) {
    if (rank.index == 0) env_.closeRootListener();  // rank 0 owns it now; the port frees when rank 0 is done
    rank.pid = pid;
    rank.state = State::kRunning;
    rank.out.fd = std::move(out_r);
    rank.err.fd = std::move(err_r);
    return true;
  }
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (n != sizeof(child_errno)) child_errno = EIO;
  note("cannot execute '" + options_.command[0] + "': " + std::strerror(child_errno));
  launch_error_ = child_errno == ENOENT ? kExitNotFound : kExitCannotExecute;
  return false;
}

void Launcher::eventLoop() {
  while (anyUnreaped() || anyStreamOpen()) {
    pollfds_.assign(1, pollfd{signal_fd_.get(), POLLIN, 0});
    poll_streams_.clear();
    for (Rank& rank : ranks_) {
      for (Stream* stream : {&rank.out, &rank.err}) {
        if (!stream->fd.valid()) continue;
        pollfds_.push_back(pollfd{stream->fd.get(), POLLIN, 0});
        poll_streams_.push_back(stream);
      }
    }
    if (::poll(pollfds_.data(), pollfds_.size(), pollTimeoutMs(Clock::now())) < 0 && errno != EINTR) {
      // Cannot wait for anything any more (ENOMEM): end the job rather than spin.
      note(errnoText("poll"));
      launch_error_ = kExitLauncherError;
      killRunning();
      closeStreams();
      return;
    }
    // Output first: what a rank wrote before it exited should come before the note about its exit.
    for (size_t i = 1; i < pollfds_.size(); ++i) {
      if (pollfds_[i].revents != 0) readStream(*poll_streams_[i - 1]);
    }
    if (pollfds_[0].revents != 0) drainSignals();
    handleDeadlines(Clock::now());
    releaseExited(/*force=*/false);
  }
}

int Launcher::pollTimeoutMs(Clock::time_point now) const {
  std::optional<Clock::time_point> next;
  for (const auto& deadline : {job_deadline_, kill_deadline_, drain_deadline_}) {
    if (deadline && (!next || *deadline < *next)) next = deadline;
  }
  for (const Rank& rank : ranks_) {
    if (rank.state == State::kExited && (!next || rank.release_deadline < *next)) next = rank.release_deadline;
  }
  if (!next) return -1;
  if (*next <= now) return 0;
  // Round up, so that the wake-up is not a few microseconds early and the loop does not spin once more.
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

void Launcher::readStream(Stream& stream) {
  ssize_t n = ::read(stream.fd.get(), read_buf_.data(), read_buf_.size());
  if (n > 0) {
    stream.lines.append(std::string_view(read_buf_.data(), static_cast<size_t>(n)));
    return;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  stream.lines.finish();
  stream.fd.reset();
}

void Launcher::drainSignals() {
  signalfd_siginfo infos[8];
  bool child_exited = false;
  for (;;) {
    ssize_t n = ::read(signal_fd_.get(), infos, sizeof(infos));
    if (n <= 0) break;  // EAGAIN: drained
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof(infos[0]); ++i) {
      int sig = static_cast<int>(infos[i].ssi_signo);
      if (sig == SIGCHLD) {
        child_exited = true;
      } else {
        onInterrupt(sig);
      }
    }
  }
  // SIGCHLDs coalesce, so one of them may stand for several exits: check every rank.
  if (child_exited) checkExited();
}

// Every exit of this batch is learned before any is acted on, and the rule for naming the failure is: a rank
// killed by a signal the launcher did not send beats a nonzero exit seen in the same batch, whatever their
// indices, since such a death is the likely cause of the other ranks' errors; otherwise rank order. A rank that
// exited on its own is never mistaken for one the launcher stopped.
void Launcher::checkExited() {
  std::vector<std::pair<Rank*, siginfo_t>> exits;
  for (Rank& rank : ranks_) {
    if (rank.state != State::kRunning) continue;
    siginfo_t info{};
    // WNOWAIT: learn the exit but keep the zombie; releaseExited reaps it.
    if (::waitid(P_PID, static_cast<id_t>(rank.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) continue;
    if (info.si_pid == 0) continue;
    rank.state = State::kExited;  // so that stopping the others does not signal it
    exits.emplace_back(&rank, info);
  }
  std::stable_partition(exits.begin(), exits.end(), [](const std::pair<Rank*, siginfo_t>& e) {
    return e.second.si_code != CLD_EXITED && e.first->last_signal == 0;
  });
  for (const auto& [rank, info] : exits) onRankExit(*rank, info);
}

void Launcher::onRankExit(Rank& rank, const siginfo_t& info) {
  rank.state = State::kExited;
  // Whatever the rank left running in its group (a shell's child, a background job) must not outlive the job; it
  // gets the same grace as a rank would. A shell's background jobs ignore SIGINT, so send SIGTERM even when the
  // group already got a forwarded SIGINT.
  if (rank.last_signal != SIGTERM && rank.last_signal != SIGKILL) ::kill(-rank.pid, SIGTERM);
  rank.release_deadline = Clock::now() + kGrace;
  int code = exitCodeOf(info);
  if (code == 0) return;
  bool first = first_failure_ == 0 && launch_error_ == 0;
  bool stop_others = first && !options_.keep_going && !timed_out_ && interrupt_signal_ == 0 && anyRunning();
  // A rank the launcher itself signalled dying is expected; anything else is news worth a line.
  if (rank.last_signal == 0) note(describeExit(rank.index, info) + (stop_others ? "; stopping the other ranks" : ""));
  if (first) first_failure_ = code;
  if (stop_others) terminateRunning(SIGTERM);
}

// Reaps exited ranks whose output is drained (nothing of theirs holds the pipes any more) or whose grace is over,
// SIGKILLing what is left of their group first; force reaps every one now.
void Launcher::releaseExited(bool force) {
  Clock::time_point now = Clock::now();
  bool released = false;
  for (Rank& rank : ranks_) {
    if (rank.state != State::kExited) continue;
    bool drained = !rank.out.fd.valid() && !rank.err.fd.valid();
    if (!force && !drained && now < rank.release_deadline) continue;
    ::kill(-rank.pid, SIGKILL);
    while (::waitpid(rank.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    rank.state = State::kReaped;
    released = true;
  }
  if (released && !anyUnreaped()) drain_deadline_ = now + kGrace;
}

void Launcher::handleDeadlines(Clock::time_point now) {
  if (job_deadline_ && now >= *job_deadline_) {
    job_deadline_.reset();
    if (anyRunning()) onTimeout();
  }
  if (kill_deadline_ && now >= *kill_deadline_) {
    kill_deadline_.reset();
    killRunning();
  }
  if (drain_deadline_ && now >= *drain_deadline_) {
    drain_deadline_.reset();
    closeStreams();
  }
}

void Launcher::onTimeout() {
  timed_out_ = true;
  std::string still_running;
  for (const Rank& rank : ranks_) {
    if (rank.state == State::kRunning) still_running += " " + std::to_string(rank.index);
  }
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%g", options_.timeout_s);
  note(std::string("timeout after ") + seconds + " s; ranks still running:" + still_running + "; stopping them");
  terminateRunning(SIGTERM);
}

void Launcher::onInterrupt(int sig) {
  if (interrupt_signal_ != 0) {
    // A second Ctrl-C: the user does not want to wait for the grace period.
    note(std::string("got SIG") + ::sigabbrev_np(sig) + " again, killing the ranks");
    killRunning();
    return;
  }
  interrupt_signal_ = sig;
  note(std::string("got SIG") + ::sigabbrev_np(sig) + ", forwarding it to the ranks");
  terminateRunning(sig);
}

// Sends sig now, and SIGKILL after the grace period to whatever ignores it.
void Launcher::terminateRunning(int sig) {
  for (Rank& rank : ranks_) {
    if (rank.state != State::kRunning) continue;
    signalRank(rank.pid, sig);
    rank.last_signal = sig;
  }
  if (!kill_deadline_) kill_deadline_ = Clock::now() + kGrace;
}

// Also reaches the groups of exited ranks still held, which may contain what those ranks left behind.
void Launcher::killRunning() {
  for (Rank& rank : ranks_) {
    if (rank.state != State::kRunning && rank.state != State::kExited) continue;
    signalRank(rank.pid, SIGKILL);
    rank.last_signal = SIGKILL;
  }
}

// Gives up on output that is still in flight: only reached when pipes outlive every rank.
void Launcher::closeStreams() {
  for (Rank& rank : ranks_) {
    for (Stream* stream : {&rank.out, &rank.err}) {
      if (!stream->fd.valid()) continue;
      stream->lines.finish();
      stream->fd.reset();
    }
  }
}

bool Launcher::anyRunning() const {
  for (const Rank& rank : ranks_) {
    if (rank.state == State::kRunning) return true;
  }
  return false;
}

bool Launcher::anyUnreaped() const {
  for (const Rank& rank : ranks_) {
    if (rank.state == State::kRunning || rank.state == State::kExited) return true;
  }
  return false;
}

bool Launcher::anyStreamOpen() const {
  for (const Rank& rank : ranks_) {
    if (rank.out.fd.valid() || rank.err.fd.valid()) return true;
  }
  return false;
}

int Launcher::exitCode() const {
  if (launch_error_ != 0) return launch_error_;
  if (timed_out_) return kExitTimeout;
  if (interrupt_signal_ != 0) return 128 + interrupt_signal_;
  return first_failure_;
}

}  // namespace psdp::run
