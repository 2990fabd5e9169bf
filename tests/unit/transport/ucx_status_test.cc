#include "transport/ucx/ucx_status.h"

#include <gtest/gtest.h>

namespace psdp::transport::ucx {
namespace {

TEST(UcxStatusTest, OkStaysOk) {
  EXPECT_TRUE(ucsStatus(UCS_OK, "anything").isOk());
}

TEST(UcxStatusTest, MapsPeerFailuresToRemote) {
  for (ucs_status_t status : {UCS_ERR_ENDPOINT_TIMEOUT, UCS_ERR_CONNECTION_RESET, UCS_ERR_UNREACHABLE,
                              UCS_ERR_NOT_CONNECTED, static_cast<ucs_status_t>(UCS_ERR_FIRST_LINK_FAILURE - 3)}) {
    EXPECT_EQ(ucsStatus(status, "send").code(), PSDP_ERR_REMOTE) << ucs_status_string(status);
  }
}

TEST(UcxStatusTest, MapsTheRest) {
  EXPECT_EQ(ucsStatus(UCS_ERR_TIMED_OUT, "x").code(), PSDP_ERR_TIMEOUT);
  EXPECT_EQ(ucsStatus(UCS_ERR_MESSAGE_TRUNCATED, "x").code(), PSDP_ERR_MISMATCH);
  EXPECT_EQ(ucsStatus(UCS_ERR_CANCELED, "x").code(), PSDP_ERR_ABORTED);
  EXPECT_EQ(ucsStatus(UCS_ERR_NO_MEMORY, "x").code(), PSDP_ERR_SYSTEM);
  EXPECT_EQ(ucsStatus(UCS_ERR_UNSUPPORTED, "x").code(), PSDP_ERR_UNSUPPORTED);
  EXPECT_EQ(ucsStatus(UCS_ERR_INVALID_PARAM, "x").code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ucsStatus(UCS_ERR_NO_ELEM, "x").code(), PSDP_ERR_INTERNAL);
}

TEST(UcxStatusTest, MessageNamesTheCallAndUcxReason) {
  Status status = ucsStatus(UCS_ERR_MESSAGE_TRUNCATED, "recv from peer 3");
  EXPECT_EQ(status.message(), std::string("recv from peer 3: ") + ucs_status_string(UCS_ERR_MESSAGE_TRUNCATED));
}

Status checked(ucs_status_t status) {
  PSDP_UCS_CHECK(status, "step");
  return Status::ok();
}

TEST(UcxStatusTest, CheckMacroReturnsOnError) {
  EXPECT_TRUE(checked(UCS_OK).isOk());
  EXPECT_EQ(checked(UCS_ERR_NO_RESOURCE).code(), PSDP_ERR_SYSTEM);
}

}  // namespace
}  // namespace psdp::transport::ucx
