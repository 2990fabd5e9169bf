// psdp-run end to end: real launcher, real ranks (small sh scripts). Ranks synchronise through FIFOs and the
// launcher's output, never through sleeps; every run is bounded by LaunchProcess::finish's deadline.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "launch_process.h"

namespace psdp::run::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::vector<std::string> sh(const std::string& script, const std::vector<std::string>& args = {}) {
  std::vector<std::string> out = {"sh", "-c", script, "sh"};
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool hasLine(const std::string& text, const std::string& line) {
  std::vector<std::string> all = lines(text);
  return std::find(all.begin(), all.end(), line) != all.end();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every number that follows "pid " in the output: ranks print their pids so the test can check they died.
// (Hand-parsed: std::regex trips GCC 12's -Wmaybe-uninitialized under the sanitizers.)
std::vector<pid_t> pidsIn(const std::string& out) {
  std::vector<pid_t> pids;
  for (size_t at = out.find("pid "); at != std::string::npos; at = out.find("pid ", at + 1)) {
    size_t digits = at + 4;
    if (digits < out.size() && std::isdigit(static_cast<unsigned char>(out[digits]))) {
      pids.push_back(static_cast<pid_t>(std::stol(out.substr(digits))));
    }
  }
  return pids;
}

bool isLowerHex(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(c) || (c >= 'a' && c <= 'f'); });
}

// True once pid has exited (reaped, or a zombie of whoever inherited it); waits up to 5 s for that.
bool exitsSoon(pid_t pid) {
  int fd = openPidfd(pid);
  if (fd < 0) return errno == ESRCH;
  bool gone = waitPidfd(fd, milliseconds(5000));
  ::close(fd);
  return gone;
}

// A scratch directory for FIFOs and files, removed with its content.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/psdp_run_test.XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  std::string fifo(const std::string& name) const {
    std::string p = path_ + "/" + name;
    return ::mkfifo(p.c_str(), 0600) == 0 ? p : std::string();
  }
  std::string file(const std::string& name, const std::string& content, mode_t mode) const {
    std::string p = path_ + "/" + name;
    FILE* f = std::fopen(p.c_str(), "w");
    if (f == nullptr) return {};
    std::fputs(content.c_str(), f);
    std::fclose(f);
    return ::chmod(p.c_str(), mode) == 0 ? p : std::string();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void expectNotHung(const LaunchResult& r) {
  EXPECT_FALSE(r.hung) << "psdp-run did not finish; stdout:\n" << r.out << "stderr:\n" << r.err;
}

// ---- environment ---------------------------------------------------------------------------------------------

class EnvironmentTest : public ::testing::TestWithParam<int> {};

TEST_P(EnvironmentTest, EveryRankGetsItsVariablesAndPrefix) {
  const int n = GetParam();
  // PSDP_RANK in the launcher's environment must not leak into the ranks.
  LaunchResult r = runLauncher(
      concat({"-n", std::to_string(n), "--"},
             sh("echo \"env $PSDP_RANK $PSDP_WORLD_SIZE $PSDP_LOCAL_RANK $PSDP_LOCAL_WORLD_SIZE $PSDP_ROOT_ADDR "
                "$PSDP_JOB_SECRET\"")),
      {"PSDP_RANK=99", "PSDP_WORLD_SIZE=99"});
  expectNotHung(r);
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "");
  std::set<int> seen;
  std::set<std::string> addrs, secrets;
  for (const std::string& line : lines(r.out)) {
    int rank = -1, env_rank = -1, world = -1, local_rank = -1, local_world = -1, port = -1;
    char secret[64] = {};
    int fields = std::sscanf(line.c_str(), "[%d] env %d %d %d %d 127.0.0.1:%d %63s", &rank, &env_rank, &world,
                             &local_rank, &local_world, &port, secret);
    ASSERT_EQ(fields, 7) << "unexpected line: " << line;
    // Rebuild the line from its fields, so that nothing else may be in it.
    std::string addr = "127.0.0.1:" + std::to_string(port);
    EXPECT_EQ(line, "[" + std::to_string(rank) + "] env " + std::to_string(env_rank) + " " + std::to_string(world) +
                        " " + std::to_string(local_rank) + " " + std::to_string(local_world) + " " + addr + " " +
                        secret);
    EXPECT_EQ(env_rank, rank) << line;  // PSDP_RANK matches the prefix
    EXPECT_EQ(world, n) << line;
    EXPECT_EQ(local_rank, rank) << line;
    EXPECT_EQ(local_world, n) << line;
    EXPECT_TRUE(port > 0 && port < 65536) << line;
    EXPECT_EQ(std::string(secret).size(), 32u) << line;
    EXPECT_TRUE(isLowerHex(secret)) << line;
    seen.insert(rank);
    addrs.insert(addr);
    secrets.insert(secret);
  }
  EXPECT_EQ(static_cast<int>(seen.size()), n);
  EXPECT_EQ(static_cast<int>(lines(r.out).size()), n);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(*seen.rbegin(), n - 1);
  EXPECT_EQ(addrs.size(), 1u) << "ranks disagree on PSDP_ROOT_ADDR";
  EXPECT_EQ(secrets.size(), 1u) << "ranks disagree on PSDP_JOB_SECRET";
}

INSTANTIATE_TEST_SUITE_P(RankCounts, EnvironmentTest, ::testing::Values(1, 3, 7));

TEST(PsdpRunTest, EachJobGetsAFreshSecret) {
  auto script = sh("echo \"$PSDP_JOB_SECRET\"");
  LaunchResult a = runLauncher(concat({"-n", "1"}, script));
  LaunchResult b = runLauncher(concat({"-n", "1"}, script));
  ASSERT_EQ(a.code, 0);
  ASSERT_EQ(b.code, 0);
  EXPECT_EQ(a.out.size(), 4 + 32 + 1u) << a.out;
  EXPECT_NE(a.out, b.out);
}

TEST(PsdpRunTest, KeepsExportedRootAddrAndSecret) {
  const std::string secret = "00112233445566778899aabbccddeeff";
  LaunchResult r = runLauncher(concat({"-n", "2"}, sh("echo \"$PSDP_ROOT_ADDR $PSDP_JOB_SECRET\"")),
                               {"PSDP_ROOT_ADDR=10.1.2.3:4567", "PSDP_JOB_SECRET=" + secret});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(hasLine(r.out, "[0] 10.1.2.3:4567 " + secret)) << r.out;
  EXPECT_TRUE(hasLine(r.out, "[1] 10.1.2.3:4567 " + secret)) << r.out;
}

TEST(PsdpRunTest, PicksThePortFromPsdpPortRange) {
  LaunchResult r = runLauncher(concat({"-n", "1"}, sh("echo \"$PSDP_ROOT_ADDR\"")), {"PSDP_PORT_RANGE=47100-47163"});
  ASSERT_EQ(r.code, 0) << r.err;
  int port = -1;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "[0] 127.0.0.1:%d\n", &port), 1) << r.out;
  EXPECT_GE(port, 47100);
  EXPECT_LE(port, 47163);
}

// Rank 0 inherits the socket psdp-run bound to PSDP_ROOT_ADDR; no other rank gets it.
TEST(PsdpRunTest, OnlyRankZeroInheritsTheRootListener) {
  LaunchResult r = runLauncher(
      concat({"-n", "2"}, sh("if [ -n \"$PSDP_ROOT_FD\" ]; then readlink /proc/self/fd/$PSDP_ROOT_FD | cut -d: -f1; "
                             "else echo none; fi")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(hasLine(r.out, "[0] socket")) << r.out;
  EXPECT_TRUE(hasLine(r.out, "[1] none")) << r.out;
}

TEST(PsdpRunTest, StdinIsDevNull) {
  // The test holds psdp-run's stdin open: a rank reading it instead of /dev/null would block in cat.
  LaunchResult r = runLauncher(concat({"-n", "2"}, sh("readlink /proc/self/fd/0; cat; echo after-cat")));
  expectNotHung(r);
  EXPECT_EQ(r.code, 0);
  for (const char* rank : {"0", "1"}) {
    EXPECT_TRUE(hasLine(r.out, std::string("[") + rank + "] /dev/null")) << r.out;
    EXPECT_TRUE(hasLine(r.out, std::string("[") + rank + "] after-cat")) << r.out;
  }
}

// ---- output --------------------------------------------------------------------------------------------------

TEST(PsdpRunTest, PrefixesStdoutAndStderrSeparatelyAndFlushesPartialLines) {
  LaunchResult r = runLauncher(
      concat({"-n", "2"}, sh("printf 'one\\ntwo-%s' \"$PSDP_RANK\"; printf 'e1\\nerr-partial-%s' \"$PSDP_RANK\" >&2")));
  ASSERT_EQ(r.code, 0);
  for (std::string rank : {"0", "1"}) {
    std::string p = "[" + rank + "] ";
    EXPECT_TRUE(hasLine(r.out, p + "one")) << r.out;
    EXPECT_TRUE(hasLine(r.out, p + "two-" + rank)) << r.out;
    EXPECT_TRUE(hasLine(r.err, p + "e1")) << r.err;
    EXPECT_TRUE(hasLine(r.err, p + "err-partial-" + rank)) << r.err;
  }
  EXPECT_EQ(lines(r.out).size(), 4u) << r.out;
  EXPECT_EQ(lines(r.err).size(), 4u) << r.err;
  EXPECT_EQ(r.out.back(), '\n');  // the partial line is completed, so the next writer starts a fresh line
}

TEST(PsdpRunTest, ManyLinesArriveWholeAndInOrder) {
  constexpr int kLines = 20000;
  LaunchResult r = runLauncher(concat({"-n", "3"}, sh("seq 1 " + std::to_string(kLines))));
  ASSERT_EQ(r.code, 0);
  std::map<int, int> last;  // rank -> last number seen
  for (const std::string& line : lines(r.out)) {
    int rank = -1, value = -1;
    ASSERT_EQ(std::sscanf(line.c_str(), "[%d] %d", &rank, &value), 2) << line;
    ASSERT_EQ(line, "[" + std::to_string(rank) + "] " + std::to_string(value));
    ASSERT_EQ(value, last[rank] + 1) << "rank " << rank << " lost or reordered a line";
    last[rank] = value;
  }
  EXPECT_EQ(last.size(), 3u);
  for (auto [rank, value] : last) EXPECT_EQ(value, kLines) << "rank " << rank;
}

// ---- failures ------------------------------------------------------------------------------------------------

TEST(PsdpRunTest, FirstFailureSetsExitCodeAndStopsTheOthers) {
  TempDir dir;
  std::string fifo = dir.fifo("up");
  ASSERT_FALSE(fifo.empty());
  // Rank 2 fails only after the three others reported "up" through the FIFO, so they are surely running then.
  // Rank 0 also has a background child, which must die with it (the launcher signals the process group).
  const char* script = R"(
    if [ "$PSDP_RANK" = 2 ]; then
      exec 3<"$1"; n=0
      while [ $n -lt 3 ] && read line <&3; do n=$((n+1)); done
      exit 3
    fi
    exec 3>"$1"
    if [ "$PSDP_RANK" = 0 ]; then
      sleep 30 & echo "pid $$ pid $!"; echo up >&3; wait; exit 0
    fi
    echo "pid $$"; echo up >&3; exec sleep 30)";
  LaunchResult r = runLauncher(concat({"-n", "4"}, sh(script, {fifo})));
  expectNotHung(r);
  EXPECT_EQ(r.code, 3);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_TRUE(contains(r.err, "rank 2 exited with code 3; stopping the other ranks")) << r.err;
  std::vector<pid_t> pids = pidsIn(r.out);
  EXPECT_EQ(pids.size(), 4u) << r.out;
  for (pid_t pid : pids) EXPECT_TRUE(exitsSoon(pid)) << "pid " << pid << " survived the job";
}

TEST(PsdpRunTest, KeepGoingLetsSurvivorsFinishAndReturnsTheFirstFailure) {
  TempDir dir;
  std::string fifo = dir.fifo("gone");
  ASSERT_FALSE(fifo.empty());
  // Rank 1 waits until rank 0 has exited (EOF on the FIFO), then is slow on purpose: without --keep-going it
  // would be stopped long before it prints. It fails too, later, which must not change the exit code.
  const char* script = R"(
    case "$PSDP_RANK" in
      0) exec 3>"$1"; exit 5 ;;
      1) cat "$1" >/dev/null; sleep 1; echo survivor-done; exit 7 ;;
      *) exit 0 ;;
    esac)";
  LaunchResult r = runLauncher(concat({"-n", "3", "--keep-going"}, sh(script, {fifo})));
  expectNotHung(r);
  EXPECT_EQ(r.code, 5);
  EXPECT_TRUE(hasLine(r.out, "[1] survivor-done")) << r.out;
  EXPECT_TRUE(contains(r.err, "rank 0 exited with code 5")) << r.err;
  EXPECT_TRUE(contains(r.err, "rank 1 exited with code 7")) << r.err;
  EXPECT_FALSE(contains(r.err, "stopping")) << r.err;
}

TEST(PsdpRunTest, RankKilledBySignalCountsAs128PlusSignal) {
  LaunchResult r = runLauncher(
      concat({"-n", "2"}, sh("if [ \"$PSDP_RANK\" = 1 ]; then kill -KILL $$; fi; echo \"pid $$\"; exec sleep 30")));
  expectNotHung(r);
  EXPECT_EQ(r.code, 137);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_TRUE(contains(r.err, "rank 1 was killed by signal 9")) << r.err;
  for (pid_t pid : pidsIn(r.out)) EXPECT_TRUE(exitsSoon(pid)) << "pid " << pid;
}

// Rank 0 exits 1 and rank 1 is SIGKILLed while psdp-run is stopped (rank 2 stops it first and continues it
// once both are zombies), so that one batch holds both exits: the unexpected signal is the failure named, and
// its code the launcher's, even though rank 0 comes first and exited first; rank 0's exit is still reported
// as its own, not as one the launcher caused.
TEST(PsdpRunTest, ASignalInTheSameBatchBeatsAnEarlierNonzeroExit) {
  TempDir dir;
  std::string pids = dir.fifo("pids"), go0 = dir.fifo("go0"), go1 = dir.fifo("go1");
  ASSERT_FALSE(pids.empty() || go0.empty() || go1.empty());
  const char* script = R"sh(
    case "$PSDP_RANK" in
      0) echo "$$" >"$1"; read x <"$2"; exit 1 ;;
      1) echo "$$" >"$1"; read x <"$3"; kill -KILL $$ ;;
      2) exec 4<>"$1"; read a <&4; read b <&4
         kill -STOP $PPID
         echo go >"$2"; echo go >"$3"
         for q in $a $b; do while [ "$(cut -d' ' -f3 /proc/$q/stat)" != Z ]; do :; done; done
         kill -CONT $PPID
         exec sleep 30 ;;
    esac)sh";
  LaunchResult r = runLauncher(concat({"-n", "3"}, sh(script, {pids, go0, go1})));
  expectNotHung(r);
  EXPECT_EQ(r.code, 137) << r.err;
  EXPECT_TRUE(contains(r.err, "rank 1 was killed by signal 9 (Killed); stopping the other ranks")) << r.err;
  EXPECT_TRUE(contains(r.err, "rank 0 exited with code 1")) << r.err;
  EXPECT_FALSE(contains(r.err, "rank 0 exited with code 1; stopping")) << r.err;
}

TEST(PsdpRunTest, TimeoutStopsHangingRanksEvenThoseIgnoringSigterm) {
  // Rank 0 ignores SIGTERM, so it needs the SIGKILL that follows the grace period; rank 1 finishes in time.
  const char* script = R"(
    echo "pid $$"
    case "$PSDP_RANK" in
      0) trap '' TERM; exec sleep 30 ;;
      1) exit 0 ;;
      *) exec sleep 30 ;;
    esac)";
  LaunchResult r = runLauncher(concat({"-n", "3", "--timeout", "1"}, sh(script)));
  expectNotHung(r);
  EXPECT_EQ(r.code, 124);
  EXPECT_LT(r.seconds, 5.0);
  EXPECT_TRUE(contains(r.err, "timeout after 1 s; ranks still running: 0 2;")) << r.err;
  for (pid_t pid : pidsIn(r.out)) EXPECT_TRUE(exitsSoon(pid)) << "pid " << pid;
}

TEST(PsdpRunTest, TimeoutFromEnvironmentAndOverriddenByOption) {
  LaunchResult hang = runLauncher(concat({"-n", "1"}, sh("exec sleep 30")), {"PSDP_RUN_TIMEOUT=0.3"});
  expectNotHung(hang);
  EXPECT_EQ(hang.code, 124);
  EXPECT_LT(hang.seconds, 5.0);
  // The rank outlives the environment's timeout; --timeout replaces it.
  LaunchResult slow =
      runLauncher(concat({"-n", "1", "--timeout", "20"}, sh("sleep 1; echo ok")), {"PSDP_RUN_TIMEOUT=0.3"});
  EXPECT_EQ(slow.code, 0) << slow.err;
  EXPECT_TRUE(hasLine(slow.out, "[0] ok"));
}

// ---- signals -------------------------------------------------------------------------------------------------

TEST(PsdpRunTest, ForwardsSigtermToRanks) {
  LaunchProcess launch(concat({"-n", "2"}, sh("trap 'echo got-term; exit 0' TERM; echo ready; sleep 30 & wait")));
  ASSERT_TRUE(launch.started());
  ASSERT_TRUE(launch.readUntil(
      [&] { return contains(launch.out(), "[0] ready\n") && contains(launch.out(), "[1] ready\n"); }, seconds(10)))
      << launch.out() << launch.err();
  launch.signal(SIGTERM);
  LaunchResult r = launch.finish();
  expectNotHung(r);
  EXPECT_EQ(r.code, 128 + SIGTERM);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_TRUE(hasLine(r.out, "[0] got-term")) << r.out;
  EXPECT_TRUE(hasLine(r.out, "[1] got-term")) << r.out;
  EXPECT_TRUE(contains(r.err, "got SIGTERM, forwarding it to the ranks")) << r.err;
}

TEST(PsdpRunTest, ForwardsSigintToRanks) {
  LaunchProcess launch(concat({"-n", "3"}, sh("echo \"ready pid $$\"; exec sleep 30")));
  ASSERT_TRUE(launch.started());
  ASSERT_TRUE(launch.readUntil([&] { return pidsIn(launch.out()).size() == 3; }, seconds(10))) << launch.out();
  launch.signal(SIGINT);
  LaunchResult r = launch.finish();
  expectNotHung(r);
  EXPECT_EQ(r.code, 128 + SIGINT);
  EXPECT_LT(r.seconds, 10.0);
  for (pid_t pid : pidsIn(r.out)) EXPECT_TRUE(exitsSoon(pid)) << "pid " << pid;
}

TEST(PsdpRunTest, RanksDieWhenTheLauncherIsKilled) {
  LaunchProcess launch(concat({"-n", "3"}, sh("echo \"pid $$\"; exec sleep 30")));
  ASSERT_TRUE(launch.started());
  ASSERT_TRUE(launch.readUntil([&] { return pidsIn(launch.out()).size() == 3; }, seconds(10))) << launch.out();
  // Open the pidfds while the ranks surely live, so a recycled pid cannot fool the check.
  std::vector<int> pidfds;
  for (pid_t pid : pidsIn(launch.out())) {
    int fd = openPidfd(pid);
    if (fd < 0 && errno == ENOSYS) GTEST_SKIP() << "pidfd_open needs Linux 5.3";
    ASSERT_GE(fd, 0) << "rank pid " << pid << " is already gone";
    pidfds.push_back(fd);
  }
  launch.signal(SIGKILL);  // no chance to clean up: only PR_SET_PDEATHSIG can take the ranks down
  LaunchResult r = launch.finish();
  EXPECT_EQ(r.code, 128 + SIGKILL);
  for (int fd : pidfds) {
    EXPECT_TRUE(waitPidfd(fd, milliseconds(5000))) << "a rank outlived the killed launcher";
    ::close(fd);
  }
}

TEST(PsdpRunTest, ChildrenOfAWrapperScriptGetTheGracePeriodToo) {
  // The rank is a wrapper shell that dies at once on SIGTERM; its child cleans up slowly on SIGTERM. The launcher
  // must neither lose the child's output nor kill it the moment the wrapper is gone.
  TempDir dir;
  std::string inner = dir.file("inner.sh",
                               "trap 'sleep 0.3; echo child-cleanup-done; exit 0' TERM\n"
                               "echo ready\n"
                               "sleep 30 & wait\n",
                               0644);
  ASSERT_FALSE(inner.empty());
  LaunchProcess launch(concat({"-n", "2"}, sh("sh \"$1\"; echo wrapper-survived", {inner})));
  ASSERT_TRUE(launch.started());
  ASSERT_TRUE(launch.readUntil(
      [&] { return contains(launch.out(), "[0] ready\n") && contains(launch.out(), "[1] ready\n"); }, seconds(10)))
      << launch.out() << launch.err();
  launch.signal(SIGTERM);
  LaunchResult r = launch.finish();
  expectNotHung(r);
  EXPECT_EQ(r.code, 128 + SIGTERM);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_TRUE(hasLine(r.out, "[0] child-cleanup-done")) << r.out;
  EXPECT_TRUE(hasLine(r.out, "[1] child-cleanup-done")) << r.out;
  EXPECT_FALSE(contains(r.out, "wrapper-survived")) << r.out;
}

TEST(PsdpRunTest, ProcessesARankLeavesBehindAreStopped) {
  // Both background children hold the rank's stdout, and the second ignores SIGTERM: it needs the SIGKILL that
  // follows the grace period.
  LaunchResult r = runLauncher(concat(
      {"-n", "1"}, sh("sleep 30 & echo \"pid $!\"; (trap '' TERM; exec sleep 30) & echo \"pid $!\"; echo rank-done")));
  expectNotHung(r);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_LT(r.seconds, 5.0);
  EXPECT_TRUE(hasLine(r.out, "[0] rank-done")) << r.out;
  std::vector<pid_t> pids = pidsIn(r.out);
  EXPECT_EQ(pids.size(), 2u) << r.out;
  for (pid_t pid : pids) EXPECT_TRUE(exitsSoon(pid)) << "pid " << pid << " outlived the job";
}

// ---- usage and command errors --------------------------------------------------------------------------------

struct UsageCase {
  std::vector<std::string> args;
  std::string message;
};

TEST(PsdpRunTest, BadUsageGivesAClearErrorAndExit125) {
  const UsageCase cases[] = {
      {{}, "missing -n N"},
      {{"true"}, "missing -n N"},
      {{"-n", "0", "true"}, "-n: '0' is not a number of ranks"},
      {{"-n", "abc", "true"}, "-n: 'abc' is not a number of ranks"},
      {{"-n", "-3", "true"}, "-n: '-3' is not a number of ranks"},
      {{"-n", "2.5", "true"}, "-n: '2.5' is not a number of ranks"},
      {{"-n", "99999", "true"}, "-n: '99999' is not a number of ranks"},
      {{"-n"}, "-n needs a value"},
      {{"-n", "3"}, "missing the command"},
      {{"-n", "3", "--"}, "missing the command"},
      {{"-n", "2", "--timeout", "soon", "true"}, "--timeout: 'soon' is not a number of seconds"},
      {{"-n", "2", "--timeout=-1", "true"}, "--timeout: '-1' is not a number of seconds"},
      {{"--bogus", "-n", "2", "true"}, "unknown option '--bogus'"},
  };
  for (const UsageCase& c : cases) {
    std::string shown;
    for (const std::string& a : c.args) shown += " " + a;
    LaunchResult r = runLauncher(c.args);
    EXPECT_TRUE(r.exited) << "psdp-run" << shown << " crashed or hung";
    EXPECT_EQ(r.code, 125) << "psdp-run" << shown;
    EXPECT_TRUE(contains(r.err, "psdp-run: " + c.message)) << "psdp-run" << shown << ":\n" << r.err;
    EXPECT_TRUE(contains(r.err, "psdp-run --help")) << r.err;
    EXPECT_EQ(r.out, "") << "psdp-run" << shown;
  }
}

TEST(PsdpRunTest, BadEnvironmentGivesAClearError) {
  LaunchResult timeout = runLauncher({"-n", "1", "true"}, {"PSDP_RUN_TIMEOUT=later"});
  EXPECT_EQ(timeout.code, 125);
  EXPECT_TRUE(contains(timeout.err, "PSDP_RUN_TIMEOUT: 'later'")) << timeout.err;
  LaunchResult range = runLauncher({"-n", "1", "true"}, {"PSDP_PORT_RANGE=9-2"});
  EXPECT_EQ(range.code, 125);
  EXPECT_TRUE(contains(range.err, "PSDP_PORT_RANGE: '9-2'")) << range.err;
}

TEST(PsdpRunTest, HelpGoesToStdout) {
  for (auto args : {std::vector<std::string>{"--help"}, std::vector<std::string>{"-n", "2", "-h", "true"}}) {
    LaunchResult r = runLauncher(args);
    EXPECT_EQ(r.code, 0);
    EXPECT_TRUE(contains(r.out, "Usage: psdp-run -n N")) << r.out;
    EXPECT_EQ(r.err, "");
  }
}

TEST(PsdpRunTest, CommandNotFoundExits127NamingIt) {
  LaunchResult in_path = runLauncher({"-n", "2", "--", "psdp-no-such-command-7f3a"});
  EXPECT_EQ(in_path.code, 127);
  EXPECT_TRUE(contains(in_path.err, "command not found: 'psdp-no-such-command-7f3a'")) << in_path.err;
  LaunchResult by_path = runLauncher({"-n", "2", "/nonexistent-dir/psdp-cmd"});
  EXPECT_EQ(by_path.code, 127);
  EXPECT_TRUE(contains(by_path.err, "'/nonexistent-dir/psdp-cmd'")) << by_path.err;
}

TEST(PsdpRunTest, CommandThatCannotBeExecutedExits126) {
  TempDir dir;
  std::string plain = dir.file("plain", "echo hi\n", 0644);
  // Executable but neither ELF nor script: only execve itself can tell, which exercises the exec-error pipe.
  std::string garbage = dir.file("garbage", "\x01\x02\x03 not a program\n", 0755);
  ASSERT_FALSE(plain.empty() || garbage.empty());
  LaunchResult r1 = runLauncher({"-n", "2", plain});
  EXPECT_EQ(r1.code, 126);
  EXPECT_TRUE(contains(r1.err, "cannot execute '" + plain + "'")) << r1.err;
  LaunchResult r2 = runLauncher({"-n", "3", garbage});
  expectNotHung(r2);
  EXPECT_EQ(r2.code, 126);
  EXPECT_TRUE(contains(r2.err, "cannot execute '" + garbage + "': Exec format error")) << r2.err;
  LaunchResult r3 = runLauncher({"-n", "1", dir.path()});
  EXPECT_EQ(r3.code, 126);
  EXPECT_TRUE(contains(r3.err, "is a directory")) << r3.err;
}

}  // namespace
}  // namespace psdp::run::test
