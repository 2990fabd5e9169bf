// Runs psdp-run as a real child process for the tests: its stdout and stderr are captured separately, its stdin
// is a pipe the test keeps open (so a rank that read the launcher's stdin would hang), and every wait is bounded.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

extern char** environ;

namespace psdp::run::test {

struct LaunchResult {
  bool exited = false;  // exited normally (not by a signal, not killed by the test's own deadline)
  int code = -1;        // exit code, or 128 + signal
  bool hung = false;    // the test had to kill psdp-run
  std::string out;
  std::string err;
  double seconds = 0;  // from start to reap
};

class LaunchProcess {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts psdp-run with args. env_overrides ("NAME=value") replace or extend the test's environment, from which
  // the variables that steer psdp-run are removed first so that the caller's shell cannot change the outcome.
  LaunchProcess(const std::vector<std::string>& args, const std::vector<std::string>& env_overrides = {}) {
    start_ = Clock::now();
    int out[2], err[2], in[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(in, O_CLOEXEC) != 0) return;
    std::vector<std::string> env = makeEnv(env_overrides);
    std::vector<std::string> argv_storage = {PSDP_RUN_PATH};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv = pointers(argv_storage);
    std::vector<char*> envp = pointers(env);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    int rc = posix_spawn(&pid_, PSDP_RUN_PATH, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    ::close(err[1]);
    ::close(in[0]);
    stdin_write_ = in[1];
    out_fd_ = out[0];
    err_fd_ = err[0];
    if (rc != 0) pid_ = -1;
  }

  ~LaunchProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    for (int fd : {out_fd_, err_fd_, stdin_write_}) {
      if (fd >= 0) ::close(fd);
    }
  }

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

  // Reads output until done() holds or both streams closed or the limit passed; returns done().
  bool readUntil(const std::function<bool()>& done, std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    while (!done() && (out_fd_ >= 0 || err_fd_ >= 0) && Clock::now() < deadline) readSome(deadline);
    return done();
  }

  void signal(int sig) { ::kill(pid_, sig); }

  // Reads until psdp-run closes its output, reaps it, and reports. Past the limit it kills psdp-run and sets hung.
  LaunchResult finish(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    LaunchResult result;
    if (pid_ <= 0) return result;
    auto deadline = Clock::now() + limit;
    while ((out_fd_ >= 0 || err_fd_ >= 0) && Clock::now() < deadline) readSome(deadline);
    if (out_fd_ >= 0 || err_fd_ >= 0) {
      result.hung = true;
      ::kill(pid_, SIGKILL);
    }
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    result.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    result.exited = !result.hung && WIFEXITED(status);
    result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = out_;
    result.err = err_;
    return result;
  }

 private:
  static std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  }

  static std::vector<std::string> makeEnv(const std::vector<std::string>& overrides) {
    static const char* const kSteering[] = {"PSDP_ROOT_ADDR", "PSDP_JOB_SECRET", "PSDP_PORT_RANGE", "PSDP_RUN_TIMEOUT"};
    auto name_of = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string_view name = name_of(*e);
      bool drop = false;
      for (const char* steering : kSteering) drop = drop || name == steering;
      for (const std::string& o : overrides) drop = drop || name == name_of(o);
      if (!drop) env.emplace_back(*e);
    }
    env.insert(env.end(), overrides.begin(), overrides.end());
    return env;
  }

  void readSome(Clock::time_point deadline) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (::poll(fds, 2, left > 0 ? static_cast<int>(left) : 0) <= 0) return;
    readFrom(fds[0], &out_fd_, &out_);
    readFrom(fds[1], &err_fd_, &err_);
  }

  static void readFrom(const pollfd& pfd, int* fd, std::string* sink) {
    if (*fd < 0 || pfd.revents == 0) return;
    char buf[65536];
    ssize_t n = ::read(*fd, buf, sizeof(buf));
    if (n > 0) {
      sink->append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      ::close(*fd);
      *fd = -1;
    }
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int stdin_write_ = -1;  // held open: psdp-run's stdin never reaches EOF
  std::string out_;
  std::string err_;
  Clock::time_point start_;
};

inline LaunchResult runLauncher(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  LaunchProcess launch(args, env);
  return launch.finish();
}

// Waits until the process behind pidfd exits; false if it is still alive after limit.
inline bool waitPidfd(int pidfd, std::chrono::milliseconds limit) {
  pollfd pfd{pidfd, POLLIN, 0};
  return ::poll(&pfd, 1, static_cast<int>(limit.count())) == 1;
}

// pidfd_open without a libc wrapper (glibc added one in 2.36). -1 with errno ESRCH when pid is already gone.
inline int openPidfd(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

}  // namespace psdp::run::test
