// PeerMemory: where peers are placed from their identities, memory handles, and reads and mappings of a real
// other process (a forked child that allocates shareable memory, reports where it is and waits for the
// parent's word: pipes both ways, no sleeps), including what a read of a dead peer says.
#include "transport/peer_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "transport/process_identity.h"
#include "unit/transport/forked_child.h"

namespace psdp::transport {
namespace {

constexpr size_t kSharedBytes = 8192;
constexpr int kReportTimeoutMs = 20000;

// The same address in the child after fork: what the parent reads there is the child's copy.
std::array<uint8_t, 256> g_private_pattern;

uint8_t sharedPattern(size_t i) {
  return static_cast<uint8_t>((i * 13 + 5) & 0xff);
}

ProcessIdentity otherProcess() {
  ProcessIdentity id = ProcessIdentity::self();
  id.pid += 1;
  return id;
}

struct ChildReport {
  pid_t pid;
  MemoryHandle::Encoded shared;
};

[[noreturn]] void runChild(int report_fd, int command_fd) {
  alarm(60);  // a safety net against a stuck parent, not synchronisation
  for (size_t i = 0; i < g_private_pattern.size(); ++i) g_private_pattern[i] = static_cast<uint8_t>(255 - i);
  Result<void*> shared = allocateShareableMemory(kSharedBytes);
  if (!shared.isOk()) _exit(10);
  auto* bytes = static_cast<uint8_t*>(shared.value());
  for (size_t i = 0; i < kSharedBytes; ++i) bytes[i] = sharedPattern(i);
  ChildReport report{};
  report.pid = getpid();
  MemoryHandle::of(bytes + 64, 1024).encode(report.shared);
  if (write(report_fd, &report, sizeof(report)) != static_cast<ssize_t>(sizeof(report))) _exit(11);
  char command = 0;
  if (read(command_fd, &command, 1) != 1) _exit(12);
  _exit(0);
}

// The child as rank 1 of a two-rank set whose rank 0 is this process.
class PeerProcess {
 public:
  bool start() {
    return child_.start(runChild, &report_, sizeof(report_), kReportTimeoutMs) && report_.pid == child_.pid();
  }
  // Kills and reaps the child: its pid then names no process.
  void stop() { child_.kill(); }

  PeerMemory memory() const {
    ProcessIdentity child = ProcessIdentity::self();
    child.pid = static_cast<uint32_t>(report_.pid);
    return PeerMemory({ProcessIdentity::self(), child}, 0);
  }
  MemoryHandle shared() const { return MemoryHandle::decode(report_.shared).value(); }

 private:
  testing::ForkedChild child_;
  ChildReport report_{};
};

TEST(PeerMemoryTest, PlacesPeersByTheirIdentities) {
  ProcessIdentity other_namespace = otherProcess();
  other_namespace.pid_namespace += 1;
  ProcessIdentity other_boot = otherProcess();
  other_boot.boot_id[0] ^= 1;
  PeerMemory memory({ProcessIdentity::self(), ProcessIdentity::self(), otherProcess(), other_namespace, other_boot}, 0);
  ASSERT_EQ(memory.place(0, 2), PeerPlace::kSameHost) << "this host's pid namespace or boot id is unknown";
  EXPECT_EQ(memory.place(0, 0), PeerPlace::kSameProcess);
  EXPECT_EQ(memory.place(0, 1), PeerPlace::kSameProcess);
  EXPECT_EQ(memory.place(2, 1), PeerPlace::kSameHost) << "the same answer seen from any rank";
  EXPECT_EQ(memory.place(0, 3), PeerPlace::kElsewhere) << "another pid namespace";
  EXPECT_EQ(memory.place(0, 4), PeerPlace::kElsewhere) << "another boot";
}

// Two containers' pid 1 with /proc/self/ns/pid unreadable would otherwise pass for one process.
TEST(PeerMemoryTest, AnUnknownNamespaceOrBootIsNeverTheSameProcessOrHost) {
  ProcessIdentity no_namespace = ProcessIdentity::self();
  no_namespace.pid_namespace = 0;
  ProcessIdentity no_boot = ProcessIdentity::self();
  no_boot.boot_id.fill(0);
  PeerMemory memory({no_namespace, no_namespace, no_boot, no_boot}, 0);
  EXPECT_EQ(memory.place(0, 1), PeerPlace::kElsewhere);
  EXPECT_EQ(memory.place(2, 3), PeerPlace::kElsewhere);
}

TEST(PeerMemoryTest, IsolatedAndSubsets) {
  std::unique_ptr<PeerMemory> isolated = PeerMemory::isolated(3, 1);
  EXPECT_EQ(isolated->size(), 3);
  EXPECT_EQ(isolated->place(1, 0), PeerPlace::kElsewhere);
  EXPECT_EQ(isolated->place(1, 1), PeerPlace::kSameProcess);
  EXPECT_EQ(isolated->readAccess(), ReadAccess::kYes) << "no other process of the host to find out about";

  PeerMemory memory({ProcessIdentity::self(), otherProcess(), ProcessIdentity::self()}, 0);
  std::unique_ptr<PeerMemory> team = memory.subset({2, 0}, 1);
  EXPECT_EQ(team->size(), 2);
  EXPECT_EQ(team->rank(), 1);
  EXPECT_EQ(team->place(1, 0), PeerPlace::kSameProcess) << "ranks 2 and 0 of the whole set";
  EXPECT_EQ(memory.subset({0, 1}, 0)->place(0, 1), PeerPlace::kSameHost);
}

TEST(PeerMemoryTest, HandlesDescribePrivateShareableAndEmptyRanges) {
  std::vector<float> private_buffer(16);
  MemoryHandle p = MemoryHandle::of(private_buffer.data(), 64);
  EXPECT_EQ(p.address(), reinterpret_cast<uintptr_t>(private_buffer.data()));
  EXPECT_EQ(p.bytes(), 64u);
  EXPECT_FALSE(p.shareable());

  Result<void*> shared = allocateShareableMemory(8192);
  ASSERT_TRUE(shared.isOk()) << shared.status().toString();
  auto* base = static_cast<std::byte*>(shared.value());
  MemoryHandle s = MemoryHandle::of(base + 256, 1024);
  EXPECT_TRUE(s.shareable());
  EXPECT_EQ(s.address(), reinterpret_cast<uintptr_t>(base + 256));
  EXPECT_FALSE(MemoryHandle::of(base + 8000, 1000).shareable()) << "runs past the allocation";
  EXPECT_TRUE(MemoryHandle::of(private_buffer.data(), 0).shareable()) << "an empty range needs nothing";

  MemoryHandle::Encoded encoded{}, again{};
  s.encode(encoded);
  Result<MemoryHandle> decoded = MemoryHandle::decode(encoded);
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(decoded.value().address(), s.address());
  EXPECT_EQ(decoded.value().bytes(), s.bytes());
  EXPECT_TRUE(decoded.value().shareable());
  decoded.value().encode(again);
  EXPECT_EQ(encoded, again) << "every field survives the trip";
  EXPECT_EQ(MemoryHandle::decode(std::span(encoded).first(MemoryHandle::kEncodedBytes - 1)).status().code(),
            PSDP_ERR_MISMATCH);
  EXPECT_TRUE(freeShareableMemory(base).isOk());
  EXPECT_EQ(freeShareableMemory(base).code(), PSDP_ERR_INVALID_ARGUMENT) << "freed twice";
}

class PeerMemoryProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(PeerMemory({ProcessIdentity::self(), otherProcess()}, 0).place(0, 1), PeerPlace::kSameHost)
        << "this host's pid namespace or boot id is unknown";
    ASSERT_TRUE(peer_.start());
  }
  PeerProcess peer_;
};

TEST_F(PeerMemoryProcessTest, ReadsThePeersPrivateMemoryOnceAProbeHasWorked) {
  PeerMemory memory = peer_.memory();
  EXPECT_EQ(memory.readAccess(), ReadAccess::kUnknown);
  const auto address = reinterpret_cast<uintptr_t>(g_private_pattern.data());
  memory.probeRead(1, address);
  if (!memory.readFailure().isOk())
    GTEST_SKIP() << "reads of other processes are refused here (Yama ptrace scope?): "
                 << memory.readFailure().toString();
  EXPECT_EQ(memory.readAccess(), ReadAccess::kYes);
  std::array<uint8_t, 256> got{};
  ASSERT_TRUE(memory.read(1, address, got.data(), got.size()).isOk());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], 255 - i) << "the child's copy, not this process's";
}

TEST_F(PeerMemoryProcessTest, MapsThePeersShareableMemory) {
  PeerMemory memory = peer_.memory();
  Result<std::byte*> mapped = memory.map(1, peer_.shared());
  ASSERT_TRUE(mapped.isOk()) << mapped.status().toString();
  for (size_t i = 0; i < 1024; ++i) ASSERT_EQ(static_cast<uint8_t>(mapped.value()[i]), sharedPattern(64 + i));
  EXPECT_EQ(memory.mapped(), 1u);
  Result<std::byte*> again = memory.map(1, peer_.shared());
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again.value(), mapped.value()) << "cached";
  EXPECT_EQ(memory.mapped(), 1u);
}

// The read names the rank whose process is gone, as a remote error: the peer failed, not this rank.
TEST_F(PeerMemoryProcessTest, AReadOfADeadPeerIsARemoteErrorNamingItsRank) {
  PeerMemory memory = peer_.memory();
  peer_.stop();
  std::array<uint8_t, 16> got{};
  Status read = memory.read(1, reinterpret_cast<uintptr_t>(g_private_pattern.data()), got.data(), got.size());
  EXPECT_EQ(read.code(), PSDP_ERR_REMOTE) << read.toString();
  EXPECT_NE(read.message().find("peer 1 failed"), std::string::npos) << read.message();
  memory.probeRead(1, reinterpret_cast<uintptr_t>(g_private_pattern.data()));
  EXPECT_EQ(memory.readAccess(), ReadAccess::kNo) << "a failed probe stops all trying";
}

TEST_F(PeerMemoryProcessTest, AnUnmappedAddressIsASystemErrorNamingTheRank) {
  PeerMemory memory = peer_.memory();
  std::array<uint8_t, 16> got{};
  Status read = memory.read(1, 0x10, got.data(), got.size());
  EXPECT_EQ(read.code(), PSDP_ERR_SYSTEM) << read.toString();
  EXPECT_NE(read.message().find("rank 1"), std::string::npos) << read.message();
  EXPECT_NE(read.message().find("0x10"), std::string::npos) << read.message();
}

}  // namespace
}  // namespace psdp::transport
