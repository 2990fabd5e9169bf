// Exit notes against real processes: forked children make their notes, report where they are, and exit
// (or are killed) on the parent's word; the parent reads what each left.
#include "transport/exit_notes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "unit/transport/forked_child.h"

namespace psdp::transport {
namespace {

constexpr int kReportTimeoutMs = 10000;

struct ChildReport {
  pid_t pid = 0;
  std::array<std::byte, ExitNotes::kEncodedRefBytes> ref{};
};

// Makes its notes, reports, then on 'f' notes a failure, on 'c' notes closing, on 'b' beats three times, and
// exits; on anything else exits as it is (running).
void runChild(int report_fd, int command_fd) {
  Result<std::unique_ptr<ExitNotes>> notes = ExitNotes::create(2);
  if (!notes.isOk()) _exit(1);
  std::vector<std::byte> ref;
  notes.value()->encodeRef(ref);
  ChildReport report{getpid(), {}};
  std::memcpy(report.ref.data(), ref.data(), report.ref.size());
  if (write(report_fd, &report, sizeof(report)) != sizeof(report)) _exit(2);
  char command = 0;
  if (read(command_fd, &command, 1) != 1) _exit(3);
  if (command == 'f') notes.value()->noteFailed();
  if (command == 'c') notes.value()->noteClosing();
  if (command == 'f' || command == 'c') notes.value()->noteFailed();  // never goes back
  for (int i = 0; command == 'b' && i < 3; ++i) notes.value()->beat();
  _exit(0);
}

class ExitNotesTest : public ::testing::Test {
 protected:
  // Starts a child as rank 1 and attaches its note.
  void startChild(ExitNotes& notes) {
    ASSERT_TRUE(child_.start(runChild, &report_, sizeof(report_), kReportTimeoutMs));
    ProcessIdentity owner = ProcessIdentity::self();
    owner.pid = static_cast<uint32_t>(report_.pid);
    Result<SegmentRef> ref = ExitNotes::decodeRef(report_.ref);
    ASSERT_TRUE(ref.isOk()) << ref.status().toString();
    notes.attach(1, owner, ref.value());
  }

  testing::ForkedChild child_;
  ChildReport report_{};
};

TEST_F(ExitNotesTest, ANoteOutlivesItsProcess) {
  for (char command : {'f', 'c', 'r'}) {
    SCOPED_TRACE(command);
    Result<std::unique_ptr<ExitNotes>> notes = ExitNotes::create(2);
    ASSERT_TRUE(notes.isOk()) << notes.status().toString();
    startChild(*notes.value());
    ASSERT_EQ(notes.value()->noteOf(1), ExitNotes::Note::kRunning) << "this host's pid namespace or boot id is unknown";
    ASSERT_EQ(child_.finish(command), 0);
    ExitNotes::Note expected = command == 'f'   ? ExitNotes::Note::kFailed
                               : command == 'c' ? ExitNotes::Note::kClosing
                                                : ExitNotes::Note::kRunning;
    EXPECT_EQ(notes.value()->noteOf(1), expected);
  }
}

TEST_F(ExitNotesTest, TheHeartbeatCountsProgressPasses) {
  Result<std::unique_ptr<ExitNotes>> notes = ExitNotes::create(2);
  ASSERT_TRUE(notes.isOk()) << notes.status().toString();
  startChild(*notes.value());
  EXPECT_EQ(notes.value()->heartbeatOf(1), 0u);
  ASSERT_EQ(child_.finish('b'), 0);
  EXPECT_EQ(notes.value()->heartbeatOf(1), 3u);
  EXPECT_EQ(notes.value()->noteOf(1), ExitNotes::Note::kRunning);
  EXPECT_EQ(notes.value()->heartbeatOf(0), 0u) << "not mapped";
}

TEST_F(ExitNotesTest, AKilledProcessLeavesRunning) {
  Result<std::unique_ptr<ExitNotes>> notes = ExitNotes::create(2);
  ASSERT_TRUE(notes.isOk()) << notes.status().toString();
  startChild(*notes.value());
  child_.kill();
  EXPECT_EQ(notes.value()->noteOf(1), ExitNotes::Note::kRunning);
}

TEST(ExitNotesUnmappedTest, UnknownWhereNothingIsMapped) {
  Result<std::unique_ptr<ExitNotes>> notes = ExitNotes::create(3);
  ASSERT_TRUE(notes.isOk()) << notes.status().toString();
  // This process (not another one), a dead pid, ranks out of range: nothing to read.
  notes.value()->attach(0, ProcessIdentity::self(), SegmentRef{1, 3, 4096, 0});
  EXPECT_EQ(notes.value()->noteOf(0), ExitNotes::Note::kUnknown);
  EXPECT_EQ(notes.value()->noteOf(2), ExitNotes::Note::kUnknown);
  EXPECT_EQ(notes.value()->noteOf(-1), ExitNotes::Note::kUnknown);
  EXPECT_EQ(notes.value()->noteOf(3), ExitNotes::Note::kUnknown);
  EXPECT_FALSE(ExitNotes::decodeRef(std::array<std::byte, 4>{}).isOk());
}

}  // namespace
}  // namespace psdp::transport
