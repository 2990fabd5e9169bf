// Pure logic of psdp-run: option parsing, port ranges, command lookup, line prefixing. No ranks are started.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "psdp_run_job.h"
#include "psdp_run_options.h"
#include "psdp_run_output.h"

namespace psdp::run {
namespace {

ParseResult parse(std::vector<const char*> args, const char* env_timeout = nullptr) {
  args.insert(args.begin(), "psdp-run");
  return parseArgs(static_cast<int>(args.size()), args.data(), env_timeout);
}

TEST(PsdpRunOptionsTest, AcceptsEverySpellingOfTheOptions) {
  for (auto args :
       {std::vector<const char*>{"-n", "4", "cmd"}, {"-n4", "cmd"}, {"--nranks", "4", "cmd"}, {"--nranks=4", "cmd"}}) {
    ParseResult r = parse(args);
    ASSERT_EQ(r.outcome, ParseOutcome::kRun) << r.error;
    EXPECT_EQ(r.options.nranks, 4);
    EXPECT_EQ(r.options.command, std::vector<std::string>{"cmd"});
  }
  ParseResult r = parse({"--keep-going", "--timeout=2.5", "-n", "2", "--", "-x", "--timeout", "9"});
  ASSERT_EQ(r.outcome, ParseOutcome::kRun) << r.error;
  EXPECT_TRUE(r.options.keep_going);
  EXPECT_DOUBLE_EQ(r.options.timeout_s, 2.5);
  EXPECT_EQ(r.options.command, (std::vector<std::string>{"-x", "--timeout", "9"}));
}

TEST(PsdpRunOptionsTest, OptionsEndAtTheCommand) {
  ParseResult r = parse({"-n", "2", "python", "-n", "5", "--help"});
  ASSERT_EQ(r.outcome, ParseOutcome::kRun) << r.error;
  EXPECT_EQ(r.options.nranks, 2);
  EXPECT_EQ(r.options.command, (std::vector<std::string>{"python", "-n", "5", "--help"}));
}

TEST(PsdpRunOptionsTest, TimeoutComesFromTheEnvironmentUnlessGiven) {
  EXPECT_DOUBLE_EQ(parse({"-n", "1", "c"}).options.timeout_s, 0);
  EXPECT_DOUBLE_EQ(parse({"-n", "1", "c"}, "7").options.timeout_s, 7);
  EXPECT_DOUBLE_EQ(parse({"-n", "1", "--timeout", "0", "c"}, "7").options.timeout_s, 0);
  EXPECT_EQ(parse({"-n", "1", "c"}, "soon").outcome, ParseOutcome::kError);
  // An option that overrides it makes a malformed environment value irrelevant.
  EXPECT_EQ(parse({"-n", "1", "--timeout", "3", "c"}, "soon").outcome, ParseOutcome::kRun);
}

TEST(PsdpRunOptionsTest, RejectsBadValues) {
  for (auto args : {std::vector<const char*>{},
                    {"c"},
                    {"-n", "0", "c"},
                    {"-n", " 3", "c"},
                    {"-n", "+3", "c"},
                    {"-n", "3x", "c"},
                    {"-n", "1025", "c"},
                    {"-n"},
                    {"-n", "2"},
                    {"-n", "2", "--"},
                    {"-n", "2", "--timeout", "nan", "c"},
                    {"-n", "2", "--timeout", "inf", "c"},
                    {"-n", "2", "--timeout", "1e9", "c"},
                    {"-n", "2", "--timeout"},
                    {"-x", "-n", "2", "c"}}) {
    ParseResult r = parse(args);
    EXPECT_EQ(r.outcome, ParseOutcome::kError) << (args.empty() ? "(none)" : args[0]);
    EXPECT_FALSE(r.error.empty());
  }
  EXPECT_EQ(parse({"-n", "1024", "c"}).options.nranks, 1024);
  EXPECT_EQ(parse({"-h"}).outcome, ParseOutcome::kHelp);
}

TEST(PsdpRunJobTest, ParsesPortRanges) {
  uint16_t lo = 0, hi = 0;
  ASSERT_TRUE(parsePortRange("29600-29699", &lo, &hi));
  EXPECT_EQ(lo, 29600);
  EXPECT_EQ(hi, 29699);
  ASSERT_TRUE(parsePortRange("5000", &lo, &hi));
  EXPECT_EQ(lo, 5000);
  EXPECT_EQ(hi, 5000);
  for (const char* bad : {"", "-", "0-10", "10-5", "1-65536", "a-b", "10-", "-10", "10-20-30"}) {
    EXPECT_FALSE(parsePortRange(bad, &lo, &hi)) << bad;
  }
}

TEST(PsdpRunJobTest, EnvironmentReplacesOwnedVariablesAndKeepsTheRest) {
  const char* env[] = {"HOME=/h", "PSDP_RANK=9", "PSDP_JOB_SECRET=", "PSDP_ROOT_ADDR=", "PSDP_TIMEOUT=5", nullptr};
  JobEnvironment job;
  std::string error;
  ASSERT_TRUE(job.init(env, &error)) << error;
  std::vector<std::string> rank1 = job.forRank(1, 3);
  auto count = [&](const std::string& prefix) {
    int n = 0;
    for (const std::string& e : rank1) n += e.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  };
  EXPECT_EQ(count("HOME=/h"), 1);
  EXPECT_EQ(count("PSDP_TIMEOUT=5"), 1);
  EXPECT_EQ(count("PSDP_RANK="), 1);
  EXPECT_EQ(count("PSDP_RANK=1"), 1);
  EXPECT_EQ(count("PSDP_WORLD_SIZE=3"), 1);
  EXPECT_EQ(count("PSDP_LOCAL_RANK=1"), 1);
  EXPECT_EQ(count("PSDP_LOCAL_WORLD_SIZE=3"), 1);
  EXPECT_EQ(count("PSDP_ROOT_ADDR=127.0.0.1:"), 1);  // empty exported values count as unset
  EXPECT_EQ(count("PSDP_JOB_SECRET="), 1);
  EXPECT_EQ(rank1.back().size(), std::string("PSDP_JOB_SECRET=").size() + 32);
}

// Rank 0 alone inherits the socket bound to PSDP_ROOT_ADDR; a user-chosen address comes with no socket.
TEST(PsdpRunJobTest, RankZeroGetsTheBoundRootListener) {
  const char* env[] = {"PSDP_ROOT_FD=99", nullptr};
  JobEnvironment job;
  std::string error;
  ASSERT_TRUE(job.init(env, &error)) << error;
  const int fd = job.rootListenerFd();
  ASSERT_GE(fd, 0);
  int listening = 0;
  socklen_t len = sizeof(listening);
  ASSERT_EQ(::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len), 0);
  EXPECT_EQ(listening, 1);
  sockaddr_in addr{};
  len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  EXPECT_EQ(job.rootAddr(), "127.0.0.1:" + std::to_string(ntohs(addr.sin_port)));
  auto has = [](const std::vector<std::string>& entries, const std::string& entry) {
    return std::find(entries.begin(), entries.end(), entry) != entries.end();
  };
  const std::string fd_entry = "PSDP_ROOT_FD=" + std::to_string(fd);
  EXPECT_TRUE(has(job.forRank(0, 2), fd_entry));
  EXPECT_FALSE(has(job.forRank(1, 2), fd_entry));
  EXPECT_FALSE(has(job.forRank(0, 2), "PSDP_ROOT_FD=99")) << "an exported PSDP_ROOT_FD is psdp-run's to set";
  job.closeRootListener();
  EXPECT_FALSE(has(job.forRank(0, 2), fd_entry));

  const char* user_env[] = {"PSDP_ROOT_ADDR=10.0.0.1:5000", nullptr};
  JobEnvironment user_job;
  ASSERT_TRUE(user_job.init(user_env, &error)) << error;
  EXPECT_EQ(user_job.rootListenerFd(), -1);
}

TEST(PsdpRunJobTest, ResolvesCommandsLikeExecvp) {
  int code = 0;
  std::string error;
  EXPECT_EQ(resolveCommand("sh", "/nonexistent:/bin:/usr/bin", &code, &error), "/bin/sh");
  EXPECT_EQ(resolveCommand("/bin/sh", nullptr, &code, &error), "/bin/sh");
  EXPECT_FALSE(resolveCommand("psdp-no-such-cmd", "/bin:/usr/bin", &code, &error));
  EXPECT_EQ(code, kExitNotFound);
  EXPECT_NE(error.find("psdp-no-such-cmd"), std::string::npos);
  EXPECT_FALSE(resolveCommand("", "/bin", &code, &error));
  EXPECT_EQ(code, kExitNotFound);
  EXPECT_FALSE(resolveCommand("/bin", nullptr, &code, &error));  // a directory
  EXPECT_EQ(code, kExitCannotExecute);
  EXPECT_FALSE(resolveCommand("bin", "/", &code, &error));  // directories in PATH are skipped, as by execvp
  EXPECT_EQ(code, kExitNotFound);
}

// Collects what a LinePrefixer writes, in a memfd rather than a pipe, so that large outputs cannot block.
class Sink {
 public:
  Sink() : fd_(::memfd_create("psdp_run_unit_test", MFD_CLOEXEC)) {}
  ~Sink() { ::close(fd_); }
  int fd() const { return fd_; }
  std::string text() const {
    std::string out(static_cast<size_t>(::lseek(fd_, 0, SEEK_END)), '\0');
    EXPECT_EQ(::pread(fd_, out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
    return out;
  }

 private:
  int fd_;
};

TEST(PsdpRunOutputTest, PrefixesWholeLinesAcrossArbitraryChunks) {
  Sink sink;
  LinePrefixer lines(12, sink.fd());
  for (const char* chunk : {"al", "pha\nbe", "ta\n", "", "\n", "gam", "ma"}) lines.append(chunk);
  EXPECT_EQ(sink.text(), "[12] alpha\n[12] beta\n[12] \n");
  lines.finish();
  EXPECT_EQ(sink.text(), "[12] alpha\n[12] beta\n[12] \n[12] gamma\n");
  lines.finish();  // nothing pending: writes nothing
  EXPECT_EQ(sink.text(), "[12] alpha\n[12] beta\n[12] \n[12] gamma\n");
}

TEST(PsdpRunOutputTest, CutsOverlongLines) {
  constexpr size_t kMax = LinePrefixer::kMaxLineBytes;
  Sink sink;
  LinePrefixer lines(0, sink.fd());
  std::string long_line(2 * kMax + 10, 'x');
  lines.append(long_line.substr(0, kMax - 1));  // arrives in pieces that straddle the cut
  lines.append(long_line.substr(kMax - 1) + "\nok\n");
  std::string expected = "[0] " + std::string(kMax, 'x') + "\n[0] " + std::string(kMax, 'x') + "\n[0] " +
                         std::string(10, 'x') + "\n[0] ok\n";
  EXPECT_EQ(sink.text(), expected);
}

TEST(PsdpRunOutputTest, SurvivesAClosedReader) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ::close(fds[0]);
  // SIGPIPE is what psdp-run ignores; here it must be ignored too, or the write would kill the test.
  struct sigaction ign {
  }, old{};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, &old);
  LinePrefixer lines(0, fds[1]);
  lines.append("lost\n");
  lines.append("also lost\n");
  lines.finish();
  ::sigaction(SIGPIPE, &old, nullptr);
  ::close(fds[1]);
  EXPECT_FALSE(writeAll(-1, "x"));
}

}  // namespace
}  // namespace psdp::run
