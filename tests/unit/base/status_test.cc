#include "base/status.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "base/deadline.h"

namespace psdp {
namespace {

Status failsWith(psdp_status_t code) { return Status::make(code, "failed with {}", static_cast<int>(code)); }

Status propagates(psdp_status_t code, bool* reached_end) {
  PSDP_RETURN_IF_ERROR(failsWith(code));
  *reached_end = true;
  return Status::ok();
}

Result<int> half(int v) {
  if (v % 2) return Status::invalidArgument("{} is odd", v);
  return v / 2;
}

Result<int> quarter(int v) {
  PSDP_ASSIGN_OR_RETURN(int h, half(v));
  PSDP_ASSIGN_OR_RETURN(int q, half(h));
  return q;
}

TEST(StatusTest, OkIsEmpty) {
  Status s;
  EXPECT_TRUE(s.isOk());
  EXPECT_EQ(s.code(), PSDP_SUCCESS);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.toString(), "success");
}

TEST(StatusTest, FactoriesCarryCodeAndMessage) {
  Status s = Status::mismatch("rank {} sent {}", 3, "all-gather");
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), PSDP_ERR_MISMATCH);
  EXPECT_EQ(s.message(), "rank 3 sent all-gather");
  EXPECT_EQ(s.toString(), "mismatch: rank 3 sent all-gather");
  EXPECT_EQ(s.withContext("init").message(), "init: rank 3 sent all-gather");
  EXPECT_EQ(s.withContext("init").code(), PSDP_ERR_MISMATCH);
  EXPECT_TRUE(Status::ok().withContext("x").isOk());
  EXPECT_EQ(Status::fromErrno(ECONNREFUSED, "connect 1.2.3.4").message(), "connect 1.2.3.4: Connection refused");
}

TEST(StatusTest, MacrosPropagate) {
  bool reached = false;
  EXPECT_EQ(propagates(PSDP_ERR_TIMEOUT, &reached).code(), PSDP_ERR_TIMEOUT);
  EXPECT_FALSE(reached);
  EXPECT_TRUE(propagates(PSDP_SUCCESS, &reached).isOk());
  EXPECT_TRUE(reached);
  EXPECT_EQ(quarter(8).value(), 2);
  EXPECT_EQ(quarter(6).status().message(), "3 is odd");
  EXPECT_EQ(quarter(5).status().code(), PSDP_ERR_INVALID_ARGUMENT);
}

TEST(StatusTest, EveryCodeHasAName) {
  for (int code = -9; code <= 1; ++code) {
    EXPECT_STRNE(statusName(static_cast<psdp_status_t>(code)), "unknown status") << code;
  }
  EXPECT_STREQ(statusName(static_cast<psdp_status_t>(-100)), "unknown status");
}

TEST(DeadlineTest, ExpiresAndSaturates) {
  Deadline past = Deadline::after(0);
  EXPECT_TRUE(past.expired());
  EXPECT_EQ(past.remainingMs(), 0);
  Deadline later = Deadline::after(100);
  EXPECT_FALSE(later.expired());
  EXPECT_GT(later.remainingSeconds(), 99);
  EXPECT_EQ(later.remainingMs(250), 250);
  EXPECT_TRUE(Deadline::after(1e300).isNever());
  EXPECT_EQ(later.min(past).timePoint(), past.timePoint());
}

}  // namespace
}  // namespace psdp
