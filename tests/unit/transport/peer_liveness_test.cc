// Process identities and pidfd watches, on real child processes.
#include "transport/peer_liveness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "transport/process_identity.h"

namespace psdp::transport {
namespace {

TEST(ProcessIdentityTest, RoundTripsThroughItsEncoding) {
  ProcessIdentity self = ProcessIdentity::self();
  EXPECT_EQ(self.pid, static_cast<uint32_t>(getpid()));
  std::vector<std::byte> bytes;
  self.encode(bytes);
  ASSERT_EQ(bytes.size(), ProcessIdentity::kEncodedBytes);
  Result<ProcessIdentity> decoded = ProcessIdentity::decode(bytes);
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(decoded.value().pid, self.pid);
  EXPECT_EQ(decoded.value().pid_namespace, self.pid_namespace);
  EXPECT_EQ(decoded.value().boot_id, self.boot_id);
}

TEST(ProcessIdentityTest, RefusesShortOrForeignBytes) {
  std::vector<std::byte> bytes;
  ProcessIdentity::self().encode(bytes);
  EXPECT_EQ(ProcessIdentity::decode(std::span(bytes).first(10)).status().code(), PSDP_ERR_INVALID_ARGUMENT);
  bytes[0] = std::byte{0};
  EXPECT_EQ(ProcessIdentity::decode(bytes).status().code(), PSDP_ERR_INVALID_ARGUMENT);
}

TEST(ProcessIdentityTest, OnlyOtherProcessesOfThisHostAndNamespaceAreLocal) {
  const ProcessIdentity& self = ProcessIdentity::self();
  EXPECT_FALSE(self.isOtherLocalProcess(self));
  ProcessIdentity other = self;
  other.pid = self.pid + 1;
  EXPECT_TRUE(self.isOtherLocalProcess(other));
  ProcessIdentity elsewhere = other;
  elsewhere.boot_id[0] ^= 1;
  EXPECT_FALSE(self.isOtherLocalProcess(elsewhere));
  ProcessIdentity container = other;
  container.pid_namespace += 1;
  EXPECT_FALSE(self.isOtherLocalProcess(container));
}

// A child that blocks until killed; its exit is what the watch must see.
pid_t startChild() {
  pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  return pid;
}

TEST(PeerLivenessTest, ReportsAnExitedPeerOnceAndLeavesTheOthers) {
  pid_t alive = startChild();
  pid_t doomed = startChild();
  ASSERT_GT(alive, 0);
  ASSERT_GT(doomed, 0);
  PeerLiveness liveness;
  ProcessIdentity id = ProcessIdentity::self();
  id.pid = static_cast<uint32_t>(alive);
  ASSERT_TRUE(liveness.watch(1, id).isOk());
  id.pid = static_cast<uint32_t>(doomed);
  ASSERT_TRUE(liveness.watch(2, id).isOk());
  EXPECT_EQ(liveness.activeFds().size(), 2u);

  std::vector<int> exited;
  liveness.forEachExited([&](int peer, uint32_t) { exited.push_back(peer); });
  EXPECT_TRUE(exited.empty());

  ASSERT_EQ(kill(doomed, SIGKILL), 0);
  ASSERT_EQ(waitpid(doomed, nullptr, 0), doomed);
  liveness.forEachExited([&](int peer, uint32_t pid) {
    exited.push_back(peer);
    EXPECT_EQ(pid, static_cast<uint32_t>(doomed));
  });
  EXPECT_EQ(exited, std::vector<int>{2});
  liveness.forEachExited([&](int peer, uint32_t) { exited.push_back(peer); });
  EXPECT_EQ(exited, std::vector<int>{2}) << "an exit is reported once";
  EXPECT_EQ(liveness.activeFds().size(), 1u) << "a reported peer's pidfd leaves the poll set";

  kill(alive, SIGKILL);
  waitpid(alive, nullptr, 0);
}

TEST(PeerLivenessTest, AnAlreadyExitedPeerIsARemoteError) {
  pid_t gone = startChild();
  ASSERT_GT(gone, 0);
  kill(gone, SIGKILL);
  waitpid(gone, nullptr, 0);
  ProcessIdentity id = ProcessIdentity::self();
  id.pid = static_cast<uint32_t>(gone);
  PeerLiveness liveness;
  EXPECT_EQ(liveness.watch(3, id).code(), PSDP_ERR_REMOTE);
}

TEST(PeerLivenessTest, IgnoresThisProcessAndOtherHosts) {
  PeerLiveness liveness;
  EXPECT_TRUE(liveness.watch(0, ProcessIdentity::self()).isOk());
  ProcessIdentity remote = ProcessIdentity::self();
  remote.pid += 1;
  remote.boot_id[3] ^= 0xff;
  EXPECT_TRUE(liveness.watch(1, remote).isOk());
  EXPECT_TRUE(liveness.activeFds().empty());
}

}  // namespace
}  // namespace psdp::transport
