// Bad input at the C boundary on a one-rank communicator: every collective entry point with every bad
// argument (bad_input_cases.h), requests used after they completed or were freed, and every call on a
// finalized or destroyed communicator. Each must return the documented error with a last error naming the
// argument, and the communicator must keep working: a correct all-reduce, checked exactly, follows each bad
// call. tests/mp/mp_bad_input.cc runs the same table on several ranks.
#include <gtest/gtest.h>
#include <psdp/psdp.h>

#include <string>
#include <vector>

#include "unit/api/bad_input_cases.h"

namespace psdp::testing {
namespace {

psdp_comm_h makeOneRankComm() {
  psdp_unique_id_t id;
  psdp_comm_h comm = nullptr;
  if (psdp_get_unique_id(&id) != PSDP_SUCCESS) return nullptr;
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  config.timeout_s = 30;
  if (psdp_comm_init(1, &id, 0, &config, &comm) != PSDP_SUCCESS) return nullptr;
  return comm;
}

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    comm_ = makeOneRankComm();
    ASSERT_NE(comm_, nullptr) << psdp_get_last_error(nullptr);
  }
  void TearDown() override {
    if (comm_ == nullptr) return;
    EXPECT_EQ(psdp_comm_finalize(comm_), PSDP_SUCCESS) << psdp_get_last_error(comm_);
    EXPECT_EQ(psdp_comm_destroy(comm_), PSDP_SUCCESS);
  }

  psdp_comm_h comm_ = nullptr;
};

TEST_F(BadInputTest, EveryCollectiveRefusesEveryBadArgumentAndStaysUsable) {
  BadInputArena arena(1);
  std::vector<BadCall> calls = collectiveBadCalls(comm_, 0, 1, arena);
  // 4 entry points, blocking and nonblocking: the table must not shrink unnoticed.
  EXPECT_GE(calls.size(), 4u * 2 * 10);
  int round = 0;
  for (const BadCall& bad : calls) {
    EXPECT_EQ(checkBadCall(bad, comm_), "");
    EXPECT_EQ(checkAllReduceWorks(comm_, 0, 1, ++round), "") << "after " << bad.name;
  }
}

// Waiting again on a completed request is allowed (psdp.h: a request stays valid until freed) and returns
// its status again; freeing it twice, or any use after free, is invalid usage and never dereferences it.
TEST_F(BadInputTest, RequestWaitedTwiceFreedTwiceAndUsedAfterFree) {
  int32_t data[5] = {1, 2, 3, 4, 5};
  int32_t out[5] = {0};
  psdp_request_h request = nullptr;
  ASSERT_EQ(psdp_all_reduce(data, out, 5, PSDP_INT32, PSDP_SUM, comm_, nullptr, &request), PSDP_SUCCESS);
  EXPECT_EQ(psdp_request_wait(request), PSDP_SUCCESS) << psdp_get_last_error(comm_);
  EXPECT_EQ(psdp_request_wait(request), PSDP_SUCCESS) << "a second wait returns the status again";
  EXPECT_EQ(psdp_request_wait_timeout(request, 0.0), PSDP_SUCCESS);
  EXPECT_EQ(psdp_request_test(request), PSDP_SUCCESS);
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[4], 5);
  ASSERT_EQ(psdp_request_free(request), PSDP_SUCCESS);
  for (const std::string& failure : checkFreedRequest(request)) ADD_FAILURE() << failure;
  EXPECT_EQ(checkAllReduceWorks(comm_, 0, 1, 1), "");

  psdp_request_h barrier = nullptr;
  ASSERT_EQ(psdp_barrier(comm_, &barrier), PSDP_SUCCESS);
  EXPECT_EQ(psdp_request_wait(barrier), PSDP_SUCCESS);
  ASSERT_EQ(psdp_request_free(barrier), PSDP_SUCCESS);
  for (const std::string& failure : checkFreedRequest(barrier)) ADD_FAILURE() << failure;
  EXPECT_EQ(checkAllReduceWorks(comm_, 0, 1, 2), "");
}

// A second communicator, finalized and then destroyed: every call that communicates is refused with invalid
// usage once it is finalized (the local queries still answer), every call once it is destroyed; the
// request it completed before stays usable until freed, and the first communicator is unaffected.
TEST_F(BadInputTest, EveryCallAfterFinalizeAndAfterDestroy) {
  psdp_comm_h other = makeOneRankComm();
  ASSERT_NE(other, nullptr) << psdp_get_last_error(nullptr);
  int32_t data[3] = {7, 8, 9};
  int32_t out[3] = {0};
  psdp_request_h request = nullptr;
  ASSERT_EQ(psdp_all_reduce(data, out, 3, PSDP_INT32, PSDP_SUM, other, nullptr, &request), PSDP_SUCCESS);
  ASSERT_EQ(psdp_comm_finalize(other), PSDP_SUCCESS) << psdp_get_last_error(other);
  for (const std::string& failure : checkDeadHandle(other, /*finalized=*/true))
    ADD_FAILURE() << "finalized: " << failure;
  for (const std::string& failure : checkQueriesAfterFinalize(other)) ADD_FAILURE() << "finalized: " << failure;
  EXPECT_EQ(checkAllReduceWorks(comm_, 0, 1, 1), "");

  ASSERT_EQ(psdp_comm_destroy(other), PSDP_SUCCESS);
  // No communicator is made from here on in this test, so `other` cannot be reused by a new one.
  for (const std::string& failure : checkDeadHandle(other, /*finalized=*/false))
    ADD_FAILURE() << "destroyed: " << failure;
  EXPECT_EQ(checkAllReduceWorks(comm_, 0, 1, 2), "");

  // Finalize completed the request before the communicator went; its status outlives the communicator.
  EXPECT_EQ(psdp_request_wait(request), PSDP_SUCCESS) << psdp_get_last_error(nullptr);
  EXPECT_EQ(out[2], 9);
  ASSERT_EQ(psdp_request_free(request), PSDP_SUCCESS) << psdp_get_last_error(nullptr);
  for (const std::string& failure : checkFreedRequest(request)) ADD_FAILURE() << failure;
  EXPECT_EQ(checkAllReduceWorks(comm_, 0, 1, 3), "");
}

}  // namespace
}  // namespace psdp::testing
