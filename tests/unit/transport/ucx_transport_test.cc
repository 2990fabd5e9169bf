// Single-rank checks of the UCX transport's contract: argument validation, state errors, size mismatches.
#include "transport/ucx/ucx_transport.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "unit/transport/ucx_rank_group.h"

namespace psdp::transport::ucx {
namespace {

using testing::kTestTimeoutSeconds;
using testing::rankLogger;

TransportParams params(int rank, int nranks, psdp_progress_mode_t mode = PSDP_PROGRESS_THREAD) {
  TransportParams params;
  params.rank = rank;
  params.nranks = nranks;
  params.progress_mode = mode;
  params.log = rankLogger(rank);
  return params;
}

class UcxSingleRankTest : public ::testing::TestWithParam<psdp_progress_mode_t> {
 protected:
  void SetUp() override {
    auto created = createUcxTransport(params(0, 1, GetParam()));
    ASSERT_TRUE(created.isOk()) << created.status().toString();
    transport_ = std::move(created).value();
  }
  void TearDown() override {
    if (transport_ && !closed_) {
      EXPECT_TRUE(transport_->close(Deadline::after(kTestTimeoutSeconds)).isOk());
    }
  }
  void connect() {
    auto address = transport_->localAddress();
    ASSERT_TRUE(address.isOk());
    Status status = transport_->connect({address.value()}, Deadline::after(kTestTimeoutSeconds));
    ASSERT_TRUE(status.isOk()) << status.toString();
  }

  std::unique_ptr<Transport> transport_;
  bool closed_ = false;
};

TEST(UcxTransportCreateTest, RejectsBadParameters) {
  EXPECT_EQ(createUcxTransport(params(2, 2)).status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(createUcxTransport(params(0, 0)).status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(createUcxTransport(params(0, (1 << 24) + 1)).status().code(), PSDP_ERR_INVALID_ARGUMENT);
}

// (An unknown name is not an error: UCX keeps it for its transports and warns when none takes it.)
TEST(UcxTransportCreateTest, RejectsABadUcxOptionValue) {
  UcxOptions options;
  options.ucx_config = {{"KEEPALIVE_INTERVAL", "not-a-time"}};
  auto created = createUcxTransport(params(0, 1), options);
  EXPECT_EQ(created.status().code(), PSDP_ERR_INVALID_ARGUMENT) << created.status().toString();
}

TEST_P(UcxSingleRankTest, DescribesItself) {
  EXPECT_STREQ(transport_->name(), "ucx");
  EXPECT_TRUE(transport_->capabilities().host_memory);
  EXPECT_FALSE(transport_->capabilities().cuda_memory);
  auto address = transport_->localAddress();
  ASSERT_TRUE(address.isOk());
  EXPECT_FALSE(address.value().empty());
}

TEST_P(UcxSingleRankTest, PostingBeforeConnectIsInvalidUsage) {
  Completion completion;
  uint64_t word = 0;
  EXPECT_EQ(transport_->send(0, 1, &word, sizeof(word), &completion).code(), PSDP_ERR_INVALID_USAGE);
  EXPECT_EQ(transport_->recv(0, 1, &word, sizeof(word), &completion).code(), PSDP_ERR_INVALID_USAGE);
  EXPECT_FALSE(completion.isDone());
}

TEST_P(UcxSingleRankTest, ConnectChecksTheAddressTable) {
  EXPECT_EQ(transport_->connect({}, Deadline::after(1)).code(), PSDP_ERR_INVALID_ARGUMENT);
  connect();
  auto address = transport_->localAddress();
  EXPECT_EQ(transport_->connect({address.value()}, Deadline::after(1)).code(), PSDP_ERR_INVALID_USAGE);
}

TEST_P(UcxSingleRankTest, RejectsTagsOutsideTheCallersSpace) {
  connect();
  Completion completion;
  uint64_t word = 0;
  EXPECT_EQ(transport_->send(0, kReservedTagBit, &word, 8, &completion).code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(transport_->recv(0, kReservedTagBit | 3, &word, 8, &completion).code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(transport_->send(0, kTagMask + 1, &word, 8, &completion).code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(transport_->send(1, 0, &word, 8, &completion).code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(transport_->send(-1, 0, &word, 8, &completion).code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(transport_->send(0, 0, nullptr, 8, &completion).code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(transport_->send(0, 0, &word, 8, nullptr).code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_FALSE(completion.isDone());
}

TEST_P(UcxSingleRankTest, SendsToItselfWithTheLargestCallerTag) {
  connect();
  constexpr Tag kTag = kReservedTagBit - 1;
  uint64_t out = 0x0123456789abcdefULL, in = 0;
  Completion sent, received;
  ASSERT_TRUE(transport_->recv(0, kTag, &in, sizeof(in), &received).isOk());
  ASSERT_TRUE(transport_->send(0, kTag, &out, sizeof(out), &sent).isOk());
  testing::expectDone(*transport_, received, "recv");
  testing::expectDone(*transport_, sent, "send");
  EXPECT_EQ(in, out);
}

TEST_P(UcxSingleRankTest, ShorterOrLongerMessageIsAMismatch) {
  connect();
  std::vector<uint32_t> small(2, 7), large(4, 9);
  Completion sent, received;
  ASSERT_TRUE(transport_->send(0, 1, small.data(), 8, &sent).isOk());
  ASSERT_TRUE(transport_->recv(0, 1, large.data(), 16, &received).isOk());
  Status status = waitFor(*transport_, received, Deadline::after(kTestTimeoutSeconds));
  EXPECT_EQ(status.code(), PSDP_ERR_MISMATCH) << status.toString();
  testing::expectDone(*transport_, sent, "send");

  ASSERT_TRUE(transport_->send(0, 2, large.data(), 16, &sent).isOk());
  ASSERT_TRUE(transport_->recv(0, 2, small.data(), 8, &received).isOk());
  status = waitFor(*transport_, received, Deadline::after(kTestTimeoutSeconds));
  EXPECT_EQ(status.code(), PSDP_ERR_MISMATCH) << status.toString();
  testing::expectDone(*transport_, sent, "send");
}

TEST_P(UcxSingleRankTest, CloseCancelsAPendingRecvAndCloseTwiceIsInvalid) {
  connect();
  uint64_t word = 0;
  Completion received;
  ASSERT_TRUE(transport_->recv(0, 5, &word, sizeof(word), &received).isOk());
  EXPECT_EQ(waitFor(*transport_, received, Deadline::after(0.01)).code(), PSDP_ERR_TIMEOUT);
  EXPECT_TRUE(transport_->close(Deadline::after(kTestTimeoutSeconds)).isOk());
  closed_ = true;
  ASSERT_TRUE(received.isDone());
  EXPECT_EQ(received.status.code(), PSDP_ERR_ABORTED) << received.status.toString();
  EXPECT_EQ(transport_->close(Deadline::after(1)).code(), PSDP_ERR_INVALID_USAGE);
  EXPECT_EQ(transport_->send(0, 1, &word, sizeof(word), &received).code(), PSDP_ERR_INVALID_USAGE);
  EXPECT_EQ(transport_->waitEvents(transport_->eventCount(), Deadline::after(1)).code(), PSDP_ERR_INVALID_USAGE);
}

INSTANTIATE_TEST_SUITE_P(Modes, UcxSingleRankTest, ::testing::Values(PSDP_PROGRESS_THREAD, PSDP_PROGRESS_CALLER),
                         [](const auto& info) { return testing::modeName(info.param); });

}  // namespace
}  // namespace psdp::transport::ucx
