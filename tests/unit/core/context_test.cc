// Team ids of a context: the tag field each team gets, cycling through 1..65535 after init's 0, refusing a
// field still held by a live team, and the last team out closing the transport. A real one-rank context.
#include "core/context.h"

#include <gtest/gtest.h>

#include <string>

namespace psdp::core {
namespace {

std::shared_ptr<Context> connectedContext() {
  auto made = Context::create(0, 1, PSDP_PROGRESS_CALLER, nullptr);
  EXPECT_TRUE(made.isOk()) << made.status().toString();
  std::shared_ptr<Context> context = std::move(made).value();
  auto address = context->transport().localAddress();
  EXPECT_TRUE(address.isOk()) << address.status().toString();
  Status connected = context->connect({address.value()}, Deadline::after(30));
  EXPECT_TRUE(connected.isOk()) << connected.toString();
  return context;
}

TEST(ContextTest, TeamIdsCycleAndRefuseALiveField) {
  std::shared_ptr<Context> context = connectedContext();
  EXPECT_EQ(context->nextTeamId(), 0u);
  ASSERT_EQ(context->joinTeam(0).value(), 0);
  ASSERT_EQ(context->joinTeam(1).value(), 1);
  // Agreed ids may skip (another member's context was further on); the next one follows the largest.
  ASSERT_EQ(context->joinTeam(5).value(), 5);
  EXPECT_EQ(context->nextTeamId(), 6u);
  EXPECT_EQ(context->joinTeam(3).status().code(), PSDP_ERR_INTERNAL);
  ASSERT_EQ(context->joinTeam(65535).value(), 65535);
  // 65536 would take field 1, which team 1 still holds.
  auto clash = context->joinTeam(65536);
  EXPECT_EQ(clash.status().code(), PSDP_ERR_INVALID_USAGE);
  EXPECT_NE(clash.status().message().find("split_share = 0"), std::string::npos) << clash.status().message();
  EXPECT_EQ(context->nextTeamId(), 65536u);
  EXPECT_TRUE(context->leaveTeam(1, /*clean=*/true, Deadline::after(10)).isOk());
  ASSERT_EQ(context->joinTeam(65536).value(), 1);
  for (transport::ContextId field : {0, 5, 65535}) {
    EXPECT_TRUE(context->leaveTeam(field, /*clean=*/true, Deadline::after(10)).isOk());
  }
  // The last team out closes the transport: posting on it is refused from then on.
  EXPECT_TRUE(context->leaveTeam(1, /*clean=*/true, Deadline::after(10)).isOk());
  transport::Completion done;
  EXPECT_EQ(context->transport().send(0, 0, nullptr, 0, &done).code(), PSDP_ERR_INVALID_USAGE);
}

}  // namespace
}  // namespace psdp::core
