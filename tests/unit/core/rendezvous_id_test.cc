#include "core/rendezvous_id.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace psdp::core {
namespace {

JobSecret testSecret() {
  JobSecret s{};
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(0xa0 + i);
  return s;
}

RendezvousId makeId(std::string host, uint16_t port) {
  return RendezvousId{std::move(host), port, testSecret()};
}

void expectSame(const RendezvousId& a, const RendezvousId& b) {
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.port, b.port);
  EXPECT_EQ(a.secret, b.secret);
}

TEST(RendezvousIdTest, BinaryRoundTrip) {
  for (const auto& id :
       {makeId("10.1.2.3", 29600), makeId("127.0.0.1", 0), makeId("::1", 65535), makeId("fd00:1234::42", 1)}) {
    psdp_unique_id_t raw;
    std::memset(&raw, 0x5a, sizeof(raw));
    id.toUniqueId(&raw);
    auto back = RendezvousId::fromUniqueId(raw);
    ASSERT_TRUE(back.isOk()) << back.status().toString();
    expectSame(back.value(), id);
  }
}

void expectRejected(const psdp_unique_id_t& raw, const char* what) {
  auto r = RendezvousId::fromUniqueId(raw);
  ASSERT_FALSE(r.isOk()) << what;
  EXPECT_EQ(r.status().code(), PSDP_ERR_INVALID_ARGUMENT) << what;
  EXPECT_NE(r.status().message().find("unique id"), std::string::npos) << r.status().message();
}

TEST(RendezvousIdTest, RejectsBytesPsdpDidNotProduce) {
  psdp_unique_id_t raw{};
  expectRejected(raw, "all zero");
  std::mt19937 rng(7);
  for (int i = 0; i < 100; ++i) {
    for (char& c : raw.internal) c = static_cast<char>(rng());
    expectRejected(raw, "random bytes");
  }
  psdp_unique_id_t good;
  makeId("10.0.0.1", 29600).toUniqueId(&good);
  // Any single changed byte of the used part, and any byte past it, must be caught.
  for (size_t i = 0; i < PSDP_UNIQUE_ID_BYTES; ++i) {
    psdp_unique_id_t bad = good;
    bad.internal[i] = static_cast<char>(bad.internal[i] ^ 0x01);
    expectRejected(bad, "flipped bit");
  }
}

TEST(RendezvousIdTest, NonNumericHostEncodesToARejectedId) {
  psdp_unique_id_t raw;
  makeId("not-an-address", 1).toUniqueId(&raw);
  expectRejected(raw, "hostname");
}

TEST(RendezvousIdTest, StringRoundTrip) {
  RendezvousId v4 = makeId("192.168.0.7", 29601);
  EXPECT_EQ(v4.toString(), "psdp1:192.168.0.7:29601:a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  RendezvousId v6 = makeId("fe80::1:2", 80);
  EXPECT_EQ(v6.toString(), "psdp1:[fe80::1:2]:80:a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  for (const auto& id : {v4, v6, makeId("::1", 0)}) {
    auto back = RendezvousId::fromString(id.toString());
    ASSERT_TRUE(back.isOk()) << back.status().toString();
    expectSame(back.value(), id);
    EXPECT_LT(id.toString().size(), size_t{PSDP_UNIQUE_ID_STRING_BYTES});
  }
  auto upper = RendezvousId::fromString("psdp1:1.2.3.4:5:A0A1A2A3A4A5A6A7A8A9AAABACADAEAF");
  ASSERT_TRUE(upper.isOk());
  EXPECT_EQ(upper.value().secret, testSecret());
}

TEST(RendezvousIdTest, StringRejectsMalformedText) {
  const std::string hex = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf";
  const std::vector<std::string> texts = {std::string(""),
                                          "psdp2:1.2.3.4:5:" + hex,
                                          "1.2.3.4:5:" + hex,
                                          "psdp1:1.2.3.4:" + hex,
                                          "psdp1:1.2.3.4:65536:" + hex,
                                          "psdp1:1.2.3.4:-1:" + hex,
                                          "psdp1:1.2.3.4::" + hex,
                                          "psdp1:1.2.3.4:5:" + hex.substr(1),
                                          "psdp1:1.2.3.4:5:" + hex + "0",
                                          "psdp1:1.2.3.4:5:g" + hex.substr(1),
                                          "psdp1:::1:5:" + hex,
                                          "psdp1:[1.2.3.4]:5:" + hex,
                                          "psdp1:[::1:5:" + hex,
                                          "psdp1:host.example:5:" + hex,
                                          "psdp1:1.2.3.4:5"};
  for (const std::string& text : texts) {
    auto r = RendezvousId::fromString(text);
    EXPECT_FALSE(r.isOk()) << text;
    if (!r.isOk()) {
      EXPECT_EQ(r.status().code(), PSDP_ERR_INVALID_ARGUMENT);
      // The text carries the secret; no error may echo it.
      EXPECT_EQ(r.status().message().find(hex.substr(0, 8)), std::string::npos) << r.status().message();
    }
  }
}

TEST(RendezvousIdTest, AddressNeverHoldsTheSecret) {
  RendezvousId id = makeId("10.0.0.1", 29600);
  EXPECT_EQ(id.address(), "10.0.0.1:29600");
  EXPECT_EQ(makeId("::1", 7).address(), "[::1]:7");
  EXPECT_EQ(id.address().find(secretToHex(id.secret).substr(0, 4)), std::string::npos);
}

TEST(RendezvousIdTest, SecretHex) {
  JobSecret s = testSecret();
  EXPECT_EQ(secretToHex(s), "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  auto back = secretFromHex(secretToHex(s));
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(back.value(), s);
  EXPECT_FALSE(secretFromHex("").isOk());
  EXPECT_FALSE(secretFromHex(std::string(31, 'a')).isOk());
  EXPECT_FALSE(secretFromHex(std::string(33, 'a')).isOk());
  EXPECT_FALSE(secretFromHex(std::string(31, 'a') + "z").isOk());
  EXPECT_FALSE(secretFromHex(std::string(31, 'a') + " ").isOk());
}

TEST(RendezvousIdTest, RandomSecretsDiffer) {
  auto a = randomSecret();
  auto b = randomSecret();
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_NE(a.value(), b.value());
  EXPECT_NE(a.value(), JobSecret{});
}

}  // namespace
}  // namespace psdp::core
