#include "core/bootstrap_protocol.h"

#include <gtest/gtest.h>

namespace psdp::core::bootstrap {
namespace {

std::vector<std::byte> bytes(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

FrameHeader headerOf(const Frame& frame) {
  return decodeHeader(std::span<const std::byte, kHeaderBytes>(frame.data(), kHeaderBytes));
}

std::span<const std::byte> bodyOf(const Frame& frame) {
  return std::span(frame).subspan(kHeaderBytes);
}

TEST(BootstrapProtocolTest, HelloRoundTrip) {
  Hello hello;
  for (size_t i = 0; i < hello.secret.size(); ++i) hello.secret[i] = static_cast<uint8_t>(i * 7);
  hello.rank = 5;
  hello.nranks = 9;
  hello.wait_ms = 1234;
  hello.payload = bytes({1, 2, 3, 0, 255});
  Frame frame = encodeHello(hello);
  FrameHeader h = headerOf(frame);
  EXPECT_EQ(checkHeader(h, FrameType::kHello, kMaxHelloBodyBytes), "");
  EXPECT_EQ(h.body_bytes, kHelloFixedBytes + 5);
  auto back = decodeHelloBody(bodyOf(frame));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back.value().secret, hello.secret);
  EXPECT_EQ(back.value().rank, 5u);
  EXPECT_EQ(back.value().nranks, 9u);
  EXPECT_EQ(back.value().wait_ms, 1234u);
  EXPECT_EQ(back.value().payload, hello.payload);
}

TEST(BootstrapProtocolTest, HelloRejectsInconsistentLengths) {
  Hello hello;
  hello.payload = bytes({1, 2, 3});
  Frame frame = encodeHello(hello);
  auto body = bodyOf(frame);
  EXPECT_FALSE(decodeHelloBody(body.first(body.size() - 1)).isOk());  // payload shorter than announced
  std::vector<std::byte> longer(body.begin(), body.end());
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decodeHelloBody(longer).isOk());          // trailing byte
  EXPECT_FALSE(decodeHelloBody(body.first(10)).isOk());  // fixed part cut
  EXPECT_FALSE(decodeHelloBody({}).isOk());
}

TEST(BootstrapProtocolTest, HeaderChecks) {
  Frame frame = encodeEmpty(FrameType::kServerHello);
  FrameHeader h = headerOf(frame);
  EXPECT_EQ(checkHeader(h, FrameType::kServerHello, 0), "");
  EXPECT_NE(checkHeader(h, FrameType::kHello, kMaxHelloBodyBytes).find("unexpected frame type"), std::string::npos);
  FrameHeader bad_magic = h;
  bad_magic.magic ^= 1;
  EXPECT_NE(checkHeader(bad_magic, FrameType::kServerHello, 0).find("magic"), std::string::npos);
  FrameHeader bad_version = h;
  bad_version.version = kProtocolVersion + 1;
  EXPECT_NE(checkHeader(bad_version, FrameType::kServerHello, 0).find("version"), std::string::npos);
  FrameHeader big = headerOf(encodeHello(Hello{}));
  big.body_bytes = kMaxHelloBodyBytes + 1;
  EXPECT_NE(checkHeader(big, FrameType::kHello, kMaxHelloBodyBytes).find("exceeds"), std::string::npos);
  big.body_bytes = UINT64_MAX;
  EXPECT_NE(checkHeader(big, FrameType::kHello, kMaxHelloBodyBytes).find("exceeds"), std::string::npos);
}

TEST(BootstrapProtocolTest, TableRoundTrip) {
  Table table = {bytes({}), bytes({1}), bytes({2, 3, 4})};
  Frame frame = encodeTable(table);
  FrameHeader h = headerOf(frame);
  EXPECT_EQ(checkHeader(h, FrameType::kTable, FrameType::kError, maxTableBodyBytes(3), kMaxErrorBodyBytes), "");
  auto back = decodeTableBody(bodyOf(frame), 3);
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(back.value(), table);
  EXPECT_FALSE(decodeTableBody(bodyOf(frame), 4).isOk());
  auto body = bodyOf(frame);
  EXPECT_FALSE(decodeTableBody(body.first(body.size() - 1), 3).isOk());
}

TEST(BootstrapProtocolTest, ErrorRoundTripKeepsCodeAndMessage) {
  Frame frame = encodeError(Status::mismatch("rank {} differs", 3));
  Status back = decodeErrorBody(bodyOf(frame));
  EXPECT_EQ(back.code(), PSDP_ERR_MISMATCH);
  EXPECT_EQ(back.message(), "rank 3 differs");
  // A code psdp does not know (or success) must not turn into success on the client.
  Frame weird = frame;
  weird[kHeaderBytes + 3] = std::byte{0};  // code becomes a non-negative value
  weird[kHeaderBytes] = std::byte{0};
  EXPECT_EQ(decodeErrorBody(bodyOf(weird)).code(), PSDP_ERR_REMOTE);
  EXPECT_FALSE(decodeErrorBody(bodyOf(frame).first(5)).isOk());
}

// A peer's error text cannot forge a log line: newlines, control bytes and non-ASCII come back escaped.
TEST(BootstrapProtocolTest, ErrorMessagesFromPeersAreEscaped) {
  Frame frame = encodeError(Status::remote("bad\n[psdp rank 0] [error] forged\x1b[2J \\ caf\xc3\xa9"));
  EXPECT_EQ(decodeErrorBody(bodyOf(frame)).message(), "bad\\n[psdp rank 0] [error] forged\\x1b[2J \\\\ caf\\xc3\\xa9");
  EXPECT_EQ(escapePeerText("plain text: rank 3 (ok)"), "plain text: rank 3 (ok)");
  EXPECT_EQ(escapePeerText(std::string_view("a\0b", 3)), "a\\x00b");
}

TEST(BootstrapProtocolTest, SecretsEqual) {
  JobSecret a{}, b{};
  EXPECT_TRUE(secretsEqual(a, b));
  b[15] = 1;
  EXPECT_FALSE(secretsEqual(a, b));
  b[15] = 0;
  b[0] = 0x80;
  EXPECT_FALSE(secretsEqual(a, b));
}

TEST(BootstrapProtocolTest, FormatRanks) {
  EXPECT_EQ(formatRanks({}), "");
  EXPECT_EQ(formatRanks({3}), "3");
  EXPECT_EQ(formatRanks({0, 1, 2, 5, 7, 8}), "0-2, 5, 7-8");
  EXPECT_EQ(formatRanks({0, 2, 4, 6}, 2), "0, 2, ...");
}

}  // namespace
}  // namespace psdp::core::bootstrap
