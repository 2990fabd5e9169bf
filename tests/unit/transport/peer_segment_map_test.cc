// PeerSegmentMap against a real other process: a forked child allocates two segments, fills them with a
// pattern and reports where they are, then waits for the parent's word (pipes both ways, no sleeps).
#include "transport/peer_segment_map.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "unit/transport/forked_child.h"

namespace psdp::transport {
namespace {

const size_t kSegmentBytes = 3 * static_cast<size_t>(sysconf(_SC_PAGESIZE));
constexpr size_t kProbeAt = 100;
constexpr size_t kProbeBytes = 64;
constexpr std::byte kProbeValue{0xee};
constexpr int kReportTimeoutMs = 20000;

std::byte pattern(int segment, size_t i) {
  return static_cast<std::byte>((i * 31 + static_cast<size_t>(segment) * 101 + 7) & 0xff);
}

struct ChildReport {
  pid_t pid;
  SegmentRef refs[2];
};

// The child: never returns. Exit code 0 is success; 'w' asks it to check the parent's write first.
[[noreturn]] void runOwner(int report_fd, int command_fd) {
  alarm(60);  // a safety net against a stuck parent, not synchronisation
  ChildReport report{};
  report.pid = getpid();
  std::byte* bases[2] = {};
  for (int s = 0; s < 2; ++s) {
    Result<void*> r = allocateSharedSegment(kSegmentBytes);
    if (!r.isOk()) _exit(10);
    bases[s] = static_cast<std::byte*>(r.value());
    for (size_t i = 0; i < kSegmentBytes; ++i) bases[s][i] = pattern(s, i);
    report.refs[s] = findSharedSegment(bases[s], kSegmentBytes).value_or(SegmentRef{});
  }
  if (write(report_fd, &report, sizeof(report)) != static_cast<ssize_t>(sizeof(report))) _exit(11);
  char command = 0;
  if (read(command_fd, &command, 1) != 1) _exit(12);  // the parent is gone
  if (command == 'w') {
    for (size_t i = kProbeAt; i < kProbeAt + kProbeBytes; ++i) {
      if (bases[0][i] != kProbeValue) _exit(13);
    }
    if (bases[0][kProbeAt - 1] != pattern(0, kProbeAt - 1)) _exit(14);
  }
  _exit(0);
}

// The parent's handle on the child.
class SegmentOwner {
 public:
  // Forks the child and reads its report, waiting at most kReportTimeoutMs.
  bool start() {
    return child_.start(runOwner, &report_, sizeof(report_), kReportTimeoutMs) && report_.pid == child_.pid();
  }
  // Sends `command` and reaps the child: its exit code, or -1 if it did not exit normally.
  int finish(char command) { return child_.finish(command); }

  bool running() const { return child_.running(); }
  const SegmentRef& ref(int segment) const { return report_.refs[segment]; }
  ProcessIdentity identity() const {
    ProcessIdentity id = ProcessIdentity::self();
    id.pid = static_cast<uint32_t>(child_.pid());
    return id;
  }

 private:
  testing::ForkedChild child_;
  ChildReport report_{};
};

class PeerSegmentMapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(ProcessIdentity::self().isOtherLocalProcess(ProcessIdentity{
        ProcessIdentity::self().pid + 1, ProcessIdentity::self().pid_namespace, ProcessIdentity::self().boot_id}))
        << "this host's pid namespace or boot id is unknown";
    ASSERT_TRUE(owner_.start());
    ASSERT_EQ(owner_.ref(0).bytes, kSegmentBytes);
  }
  void TearDown() override {
    if (owner_.running()) {
      EXPECT_EQ(owner_.finish('q'), 0);
    }
  }

  static void expectPattern(const std::byte* p, int segment, size_t from, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(p[i], pattern(segment, from + i)) << "byte " << from + i;
  }

  SegmentOwner owner_;
};

TEST_F(PeerSegmentMapTest, SeesTheOwnersDataAndCachesTheMapping) {
  PeerSegmentMap map(4);
  Result<std::byte*> whole = map.map(owner_.identity(), owner_.ref(0), kSegmentBytes);
  ASSERT_TRUE(whole.isOk()) << whole.status().toString();
  expectPattern(whole.value(), 0, 0, kSegmentBytes);
  EXPECT_EQ(map.mapped(), 1u);

  SegmentRef part = owner_.ref(0);
  part.offset = kProbeAt;
  Result<std::byte*> again = map.map(owner_.identity(), part, kProbeBytes);
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(again.value(), whole.value() + kProbeAt) << "the cached mapping, not a new one";
  EXPECT_EQ(map.mapped(), 1u);

  Result<std::byte*> other = map.map(owner_.identity(), owner_.ref(1), kSegmentBytes);
  ASSERT_TRUE(other.isOk()) << other.status().toString();
  expectPattern(other.value(), 1, 0, kSegmentBytes);
  EXPECT_EQ(map.mapped(), 2u);
}

TEST_F(PeerSegmentMapTest, WritesReachTheOwner) {
  PeerSegmentMap map(4);
  SegmentRef probe = owner_.ref(0);
  probe.offset = kProbeAt;
  Result<std::byte*> p = map.map(owner_.identity(), probe, kProbeBytes);
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  expectPattern(p.value(), 0, kProbeAt, kProbeBytes);
  std::fill(p.value(), p.value() + kProbeBytes, kProbeValue);
  EXPECT_EQ(owner_.finish('w'), 0) << "the child did not see the write (13) or saw too much (14)";
}

TEST_F(PeerSegmentMapTest, ARangeBeyondTheSegmentIsAMismatch) {
  PeerSegmentMap map(4);
  Result<std::byte*> r = map.map(owner_.identity(), owner_.ref(0), kSegmentBytes + 1);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), PSDP_ERR_MISMATCH);
  SegmentRef tail = owner_.ref(0);
  tail.offset = kSegmentBytes - 8;
  r = map.map(owner_.identity(), tail, 9);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), PSDP_ERR_MISMATCH);
  tail.offset = kSegmentBytes + 1;
  EXPECT_EQ(map.map(owner_.identity(), tail, 0).status().code(), PSDP_ERR_MISMATCH);
  EXPECT_TRUE(map.map(owner_.identity(), owner_.ref(0), kSegmentBytes).isOk()) << "the whole segment fits";
}

TEST_F(PeerSegmentMapTest, ASegmentSmallerThanClaimedIsAMismatch) {
  PeerSegmentMap map(4);
  SegmentRef inflated = owner_.ref(0);
  inflated.bytes += kSegmentBytes;
  Result<std::byte*> r = map.map(owner_.identity(), inflated, 8);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), PSDP_ERR_MISMATCH);
  EXPECT_NE(r.status().message().find("/proc/"), std::string::npos) << r.status().message();
  EXPECT_EQ(map.mapped(), 0u);
}

TEST_F(PeerSegmentMapTest, ABadDescriptorIsASystemErrorNamingThePath) {
  PeerSegmentMap map(4);
  SegmentRef bad = owner_.ref(0);
  bad.fd = 1000;
  Result<std::byte*> r = map.map(owner_.identity(), bad, 8);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), PSDP_ERR_SYSTEM);
  std::string path = "/proc/" + std::to_string(owner_.identity().pid) + "/fd/1000";
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
  EXPECT_EQ(map.mapped(), 0u);
}

TEST_F(PeerSegmentMapTest, CapacityOneKeepsOnlyTheNewestMapping) {
  PeerSegmentMap map(1);
  for (int s : {0, 1, 0}) {
    Result<std::byte*> r = map.map(owner_.identity(), owner_.ref(s), kSegmentBytes);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    expectPattern(r.value(), s, 0, kSegmentBytes);
    EXPECT_EQ(map.mapped(), 1u) << "after segment " << s;
  }
}

}  // namespace
}  // namespace psdp::transport
