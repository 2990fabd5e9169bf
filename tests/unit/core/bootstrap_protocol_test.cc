#include "core/bootstrap_protocol.h"

#include <gtest/gtest.h>

#include <algorithm>

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

JobSecret secretOf(uint8_t seed) {
  JobSecret s{};
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(seed + i * 7);
  return s;
}

SessionNonces noncesOf(uint8_t seed) {
  SessionNonces n;
  for (size_t i = 0; i < n.root.size(); ++i) {
    n.root[i] = static_cast<uint8_t>(seed + i);
    n.client[i] = static_cast<uint8_t>(seed * 3 + i);
  }
  return n;
}

// Seals `rest` as a frame of `type` and returns the whole frame.
Frame sealed(FrameType type, std::span<const std::byte> rest, const JobSecret& secret = secretOf(1),
             const SessionNonces& nonces = noncesOf(2)) {
  auto frame = encodeSealed(type, secret, nonces, rest);
  EXPECT_TRUE(frame.isOk()) << frame.status().toString();
  return frame.isOk() ? frame.value() : Frame();
}

TEST(BootstrapProtocolTest, HelloRoundTrip) {
  Hello hello;
  hello.rank = 5;
  hello.nranks = 9;
  hello.wait_ms = 1234;
  hello.payload = bytes({1, 2, 3, 0, 255});
  Frame frame = sealed(FrameType::kHello, encodeHelloRest(hello));
  FrameHeader h = headerOf(frame);
  EXPECT_EQ(checkHeader(h, FrameType::kHello, kMaxHelloBodyBytes), "");
  EXPECT_EQ(h.body_bytes, kMacBytes + kHelloFixedBytes + 5);
  auto rest = openSealed(FrameType::kHello, bodyOf(frame), secretOf(1), noncesOf(2));
  ASSERT_TRUE(rest.isOk()) << rest.status().toString();
  auto back = decodeHelloRest(rest.value());
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back.value().rank, 5u);
  EXPECT_EQ(back.value().nranks, 9u);
  EXPECT_EQ(back.value().wait_ms, 1234u);
  EXPECT_EQ(back.value().payload, hello.payload);
}

TEST(BootstrapProtocolTest, HelloRejectsInconsistentLengths) {
  Hello hello;
  hello.payload = bytes({1, 2, 3});
  std::vector<std::byte> rest = encodeHelloRest(hello);
  auto body = std::span<const std::byte>(rest);
  EXPECT_FALSE(decodeHelloRest(body.first(body.size() - 1)).isOk());  // payload shorter than announced
  std::vector<std::byte> longer(body.begin(), body.end());
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decodeHelloRest(longer).isOk());          // trailing byte
  EXPECT_FALSE(decodeHelloRest(body.first(10)).isOk());  // fixed part cut
  EXPECT_FALSE(decodeHelloRest({}).isOk());
}

// A sealed frame opens only with the secret, the nonces and the type it was sealed with, and only unaltered.
TEST(BootstrapProtocolTest, SealedFramesVerifyOnlyOnTheirOwnConnectionAndUnaltered) {
  std::vector<std::byte> rest = encodeTableRest({bytes({7, 8}), bytes({9})});
  Frame frame = sealed(FrameType::kTable, rest);
  auto body = bodyOf(frame);
  auto opened = openSealed(FrameType::kTable, body, secretOf(1), noncesOf(2));
  ASSERT_TRUE(opened.isOk()) << opened.status().toString();
  EXPECT_TRUE(std::equal(opened.value().begin(), opened.value().end(), rest.begin(), rest.end()));

  EXPECT_EQ(openSealed(FrameType::kTable, body, secretOf(3), noncesOf(2)).status().code(), PSDP_ERR_MISMATCH);
  EXPECT_EQ(openSealed(FrameType::kTable, body, secretOf(1), noncesOf(4)).status().code(), PSDP_ERR_MISMATCH);
  SessionNonces swapped = noncesOf(2);
  std::swap(swapped.root, swapped.client);
  EXPECT_EQ(openSealed(FrameType::kTable, body, secretOf(1), swapped).status().code(), PSDP_ERR_MISMATCH);
  // The same MAC under another type: a root proof cannot be replayed as a hello, nor a table as an error.
  EXPECT_EQ(openSealed(FrameType::kError, body, secretOf(1), noncesOf(2)).status().code(), PSDP_ERR_MISMATCH);
  for (size_t i = 0; i < body.size(); i += 5) {
    Frame altered(body.begin(), body.end());
    altered[i] ^= std::byte{0x01};
    EXPECT_EQ(openSealed(FrameType::kTable, altered, secretOf(1), noncesOf(2)).status().code(), PSDP_ERR_MISMATCH)
        << "byte " << i;
  }
  EXPECT_EQ(openSealed(FrameType::kTable, body.first(kMacBytes - 1), secretOf(1), noncesOf(2)).status().code(),
            PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(openSealed(FrameType::kTable, body.first(body.size() - 1), secretOf(1), noncesOf(2)).status().code(),
            PSDP_ERR_MISMATCH);
}

// A head made for a shared rest equals the head of the whole sealed frame.
TEST(BootstrapProtocolTest, SealedHeadMatchesTheWholeFrame) {
  std::vector<std::byte> rest = encodeErrorRest(Status::timeout("ranks 3 missing"));
  Frame whole = sealed(FrameType::kError, rest);
  auto head = encodeSealedHead(FrameType::kError, secretOf(1), noncesOf(2), digestOf(rest), rest.size());
  ASSERT_TRUE(head.isOk());
  ASSERT_EQ(head.value().size(), kHeaderBytes + kMacBytes);
  EXPECT_TRUE(std::equal(head.value().begin(), head.value().end(), whole.begin()));
}

TEST(BootstrapProtocolTest, NonceFramesCarryExactlyOneNonce) {
  Nonce nonce{};
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(200 - i);
  Frame frame = encodeChallenge(nonce);
  EXPECT_EQ(checkHeader(headerOf(frame), FrameType::kChallenge, kNonceBytes), "");
  auto back = decodeNonceBody(bodyOf(frame));
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(back.value(), nonce);
  EXPECT_FALSE(decodeNonceBody(bodyOf(frame).first(kNonceBytes - 1)).isOk());
  EXPECT_EQ(headerOf(encodeServerHello(nonce)).type, static_cast<uint16_t>(FrameType::kServerHello));
  auto a = freshNonce();
  auto b = freshNonce();
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_NE(a.value(), b.value());
}

TEST(BootstrapProtocolTest, HeaderChecks) {
  Frame frame = encodeServerHello(Nonce{});
  FrameHeader h = headerOf(frame);
  EXPECT_EQ(checkHeader(h, FrameType::kServerHello, kNonceBytes), "");
  EXPECT_NE(checkHeader(h, FrameType::kServerHello, 0).find("exceeds"), std::string::npos);
  EXPECT_NE(checkHeader(h, FrameType::kHello, kMaxHelloBodyBytes).find("unexpected frame type"), std::string::npos);
  FrameHeader bad_magic = h;
  bad_magic.magic ^= 1;
  EXPECT_NE(checkHeader(bad_magic, FrameType::kServerHello, kNonceBytes).find("magic"), std::string::npos);
  FrameHeader bad_version = h;
  bad_version.version = kProtocolVersion + 1;
  EXPECT_NE(checkHeader(bad_version, FrameType::kServerHello, kNonceBytes).find("version"), std::string::npos);
  FrameHeader big = headerOf(sealed(FrameType::kHello, encodeHelloRest(Hello{})));
  big.body_bytes = kMaxHelloBodyBytes + 1;
  EXPECT_NE(checkHeader(big, FrameType::kHello, kMaxHelloBodyBytes).find("exceeds"), std::string::npos);
  big.body_bytes = UINT64_MAX;
  EXPECT_NE(checkHeader(big, FrameType::kHello, kMaxHelloBodyBytes).find("exceeds"), std::string::npos);
}

TEST(BootstrapProtocolTest, TableRoundTrip) {
  Table table = {bytes({}), bytes({1}), bytes({2, 3, 4})};
  std::vector<std::byte> rest = encodeTableRest(table);
  Frame frame = sealed(FrameType::kTable, rest);
  FrameHeader h = headerOf(frame);
  EXPECT_EQ(checkHeader(h, FrameType::kTable, FrameType::kError, maxTableBodyBytes(3), kMaxErrorBodyBytes), "");
  auto back = decodeTableRest(rest, 3);
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(back.value(), table);
  EXPECT_FALSE(decodeTableRest(rest, 4).isOk());
  EXPECT_FALSE(decodeTableRest(std::span<const std::byte>(rest).first(rest.size() - 1), 3).isOk());
}

TEST(BootstrapProtocolTest, ErrorRoundTripKeepsCodeAndMessage) {
  std::vector<std::byte> rest = encodeErrorRest(Status::mismatch("rank {} differs", 3));
  Status back = decodeErrorRest(rest);
  EXPECT_EQ(back.code(), PSDP_ERR_MISMATCH);
  EXPECT_EQ(back.message(), "rank 3 differs");
  // A code psdp does not know (or success) must not turn into success on the client.
  std::vector<std::byte> weird = rest;
  weird[3] = std::byte{0};  // code becomes a non-negative value
  weird[0] = std::byte{0};
  EXPECT_EQ(decodeErrorRest(weird).code(), PSDP_ERR_REMOTE);
  EXPECT_FALSE(decodeErrorRest(std::span<const std::byte>(rest).first(5)).isOk());
}

// A peer's error text cannot forge a log line: newlines, control bytes and non-ASCII come back escaped.
TEST(BootstrapProtocolTest, ErrorMessagesFromPeersAreEscaped) {
  std::vector<std::byte> rest =
      encodeErrorRest(Status::remote("bad\n[psdp rank 0] [error] forged\x1b[2J \\ caf\xc3\xa9"));
  EXPECT_EQ(decodeErrorRest(rest).message(), "bad\\n[psdp rank 0] [error] forged\\x1b[2J \\\\ caf\\xc3\\xa9");
  EXPECT_EQ(escapePeerText("plain text: rank 3 (ok)"), "plain text: rank 3 (ok)");
  EXPECT_EQ(escapePeerText(std::string_view("a\0b", 3)), "a\\x00b");
}

TEST(BootstrapProtocolTest, FormatRanks) {
  EXPECT_EQ(formatRanks({}), "");
  EXPECT_EQ(formatRanks({3}), "3");
  EXPECT_EQ(formatRanks({0, 1, 2, 5, 7, 8}), "0-2, 5, 7-8");
  EXPECT_EQ(formatRanks({0, 2, 4, 6}, 2), "0, 2, ...");
}

}  // namespace
}  // namespace psdp::core::bootstrap
