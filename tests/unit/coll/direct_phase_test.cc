// What a rank says of its CMA reads in its offers (DirectChannel::cmaReach): the pure part of the direct
// phase. The phase itself runs in the multi-process tests (tests/mp, mp_matrix_*_direct*) and in coll_test's
// threads-as-ranks collectives.
#include "coll/direct_phase.h"

#include <gtest/gtest.h>

namespace psdp::coll {
namespace {

using transport::ProcessIdentity;

ProcessIdentity anotherProcessHere() {
  ProcessIdentity id = ProcessIdentity::self();
  id.pid += 1;
  return id;
}

TEST(DirectChannelTest, CmaIsUnknownUntilEveryOtherProcessWasRead) {
  DirectChannel channel(3, DirectChannel::TileMemory::allocate().value());
  EXPECT_EQ(channel.cmaReach(0), CmaReach::kUnknown) << "no offer seen yet";
  channel.peer(1).process = ProcessIdentity::self();
  channel.peer(2).process = anotherProcessHere();
  EXPECT_EQ(channel.cmaReach(0), CmaReach::kUnknown) << "rank 2 is another process, not read yet";
  channel.peer(2).cma_verified = true;
  EXPECT_EQ(channel.cmaReach(0), CmaReach::kYes);
}

TEST(DirectChannelTest, PeersOfThisProcessOrBeyondCmaLeaveNothingToLearn) {
  DirectChannel channel(3, DirectChannel::TileMemory::allocate().value());
  channel.peer(1).process = ProcessIdentity::self();
  ProcessIdentity elsewhere = anotherProcessHere();
  elsewhere.pid_namespace ^= 1;  // another pid namespace: CMA could not name it
  channel.peer(2).process = elsewhere;
  EXPECT_EQ(channel.cmaReach(0), CmaReach::kYes);
}

TEST(DirectChannelTest, AFailedReadSaysNoForGood) {
  DirectChannel channel(2, DirectChannel::TileMemory::allocate().value());
  channel.peer(1).process = anotherProcessHere();
  channel.peer(1).cma_verified = true;
  channel.cmaFailed(Status::system("process_vm_readv: Operation not permitted"));
  EXPECT_EQ(channel.cmaReach(0), CmaReach::kNo);
  EXPECT_EQ(channel.cmaFailure().code(), PSDP_ERR_SYSTEM);
}

}  // namespace
}  // namespace psdp::coll
