// Direct offers: the wire format, what BufferOffer::of finds, and the reachability rule every rank applies.
#include "coll/direct_offer.h"

#include <gtest/gtest.h>

#include <vector>

namespace psdp::coll {
namespace {

using transport::ProcessIdentity;

ProcessIdentity otherProcess() {
  ProcessIdentity id = ProcessIdentity::self();
  id.pid += 1;
  return id;
}

// An offer whose buffers are both in segments or both private, as `in_segment` says.
DirectOffer offerOf(const ProcessIdentity& process, bool in_segment) {
  DirectOffer offer;
  offer.process = process;
  offer.send = {0x1000, 64, in_segment, {}};
  offer.recv = {0x2000, 64, in_segment, {}};
  return offer;
}

TEST(DirectOfferTest, EncodeDecodeKeepsEveryField) {
  DirectOffer offer;
  offer.process = {1234, 0x1122334455667788, {}};
  for (size_t i = 0; i < offer.process.boot_id.size(); ++i) offer.process.boot_id[i] = static_cast<uint8_t>(i + 1);
  offer.send = {0xdeadbeef000, 4096, true, {7, 11, 8192, 128}};
  offer.recv = {0xcafe0000000, 100, false, {9, -1, 4096, 3}};
  Result<DirectOffer> r = decodeDirectOffer(encodeDirectOffer(offer));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const DirectOffer& d = r.value();
  EXPECT_EQ(d.process.pid, 1234u);
  EXPECT_EQ(d.process.pid_namespace, 0x1122334455667788u);
  EXPECT_EQ(d.process.boot_id, offer.process.boot_id);
  for (auto [got, want] : {std::pair{&d.send, &offer.send}, std::pair{&d.recv, &offer.recv}}) {
    EXPECT_EQ(got->address, want->address);
    EXPECT_EQ(got->bytes, want->bytes);
    EXPECT_EQ(got->in_segment, want->in_segment);
    EXPECT_EQ(got->segment.id, want->segment.id);
    EXPECT_EQ(got->segment.fd, want->segment.fd);
    EXPECT_EQ(got->segment.bytes, want->segment.bytes);
    EXPECT_EQ(got->segment.offset, want->segment.offset);
  }
}

TEST(DirectOfferTest, WrongLengthOrMagicIsAMismatch) {
  DirectOfferBytes bytes = encodeDirectOffer(offerOf(ProcessIdentity::self(), true));
  std::vector<std::byte> longer(bytes.begin(), bytes.end());
  longer.push_back(std::byte{0});
  EXPECT_EQ(decodeDirectOffer(longer).status().code(), PSDP_ERR_MISMATCH);
  EXPECT_EQ(decodeDirectOffer(std::span(bytes).first(kDirectOfferBytes - 1)).status().code(), PSDP_ERR_MISMATCH);
  EXPECT_EQ(decodeDirectOffer({}).status().code(), PSDP_ERR_MISMATCH);
  for (size_t at : {size_t{0}, size_t{4}, size_t{8}}) {  // magic, version, the identity's own magic
    DirectOfferBytes bad = bytes;
    bad[at] ^= std::byte{0x40};
    EXPECT_EQ(decodeDirectOffer(bad).status().code(), PSDP_ERR_MISMATCH) << "byte " << at;
  }
  EXPECT_TRUE(decodeDirectOffer(bytes).isOk());
}

TEST(DirectOfferTest, OfDescribesPrivateSegmentAndEmptyRanges) {
  std::vector<float> private_buffer(16);
  BufferOffer p = BufferOffer::of(private_buffer.data(), 64);
  EXPECT_EQ(p.address, reinterpret_cast<uintptr_t>(private_buffer.data()));
  EXPECT_EQ(p.bytes, 64u);
  EXPECT_FALSE(p.in_segment);

  Result<void*> segment = transport::allocateSharedSegment(8192);
  ASSERT_TRUE(segment.isOk()) << segment.status().toString();
  auto* base = static_cast<std::byte*>(segment.value());
  BufferOffer s = BufferOffer::of(base + 256, 1024);
  EXPECT_TRUE(s.in_segment);
  EXPECT_EQ(s.address, reinterpret_cast<uintptr_t>(base + 256));
  EXPECT_EQ(s.segment.offset, 256u);
  EXPECT_EQ(s.segment.bytes, 8192u);
  EXPECT_EQ(s.segment.id, transport::findSharedSegment(base, 1)->id);
  EXPECT_FALSE(BufferOffer::of(base + 8000, 1000).in_segment) << "runs past the segment";

  BufferOffer empty = BufferOffer::of(private_buffer.data(), 0);
  EXPECT_TRUE(empty.in_segment) << "an empty range needs no segment";
  EXPECT_EQ(empty.bytes, 0u);
  EXPECT_TRUE(transport::freeSharedSegment(base).isOk());
}

TEST(DirectOfferTest, OneProcessAlwaysReachesItself) {
  DirectOffer a = offerOf(ProcessIdentity::self(), false);
  DirectOffer b = offerOf(ProcessIdentity::self(), false);
  EXPECT_TRUE(sameProcess(a.process, b.process));
  EXPECT_TRUE(canReach(a, b));
  EXPECT_FALSE(sameProcess(a.process, otherProcess()));
}

// Two containers' pid 1 with /proc/self/ns/pid unreadable would otherwise pass for one process.
TEST(DirectOfferTest, AnUnknownNamespaceOrBootIsNeverTheSameProcess) {
  ProcessIdentity no_namespace = ProcessIdentity::self();
  no_namespace.pid_namespace = 0;
  EXPECT_FALSE(sameProcess(no_namespace, no_namespace));
  ProcessIdentity no_boot = ProcessIdentity::self();
  no_boot.boot_id.fill(0);
  EXPECT_FALSE(sameProcess(no_boot, no_boot));
}

TEST(DirectOfferTest, AnotherLocalProcessNeedsBothTargetBuffersInSegments) {
  DirectOffer from = offerOf(ProcessIdentity::self(), false);
  DirectOffer to = offerOf(otherProcess(), true);
  EXPECT_TRUE(canReach(from, to)) << "only the target's buffers matter";
  to.send.in_segment = false;
  EXPECT_FALSE(canReach(from, to));
  to.send.in_segment = true;
  to.recv.in_segment = false;
  EXPECT_FALSE(canReach(from, to));
}

TEST(DirectOfferTest, AnotherBootOrPidNamespaceIsOutOfReach) {
  DirectOffer from = offerOf(ProcessIdentity::self(), true);
  DirectOffer to = offerOf(otherProcess(), true);
  ASSERT_TRUE(canReach(from, to));
  to.process.boot_id[0] ^= 1;
  EXPECT_FALSE(canReach(from, to));
  to = offerOf(otherProcess(), true);
  to.process.pid_namespace += 1;
  EXPECT_FALSE(canReach(from, to));
  to.process.pid = from.process.pid;  // the same pid in another namespace is another process
  EXPECT_FALSE(canReach(from, to));
}

TEST(DirectOfferTest, ReachableOnlyIfEveryPairIs) {
  std::vector<DirectOffer> offers = {offerOf(ProcessIdentity::self(), true), offerOf(ProcessIdentity::self(), true),
                                     offerOf(otherProcess(), true)};
  EXPECT_TRUE(directReachable(offers));
  // Rank 1's private buffers are fine for rank 0, its own process, but not for rank 2: one pair of six.
  offers[1] = offerOf(ProcessIdentity::self(), false);
  EXPECT_FALSE(directReachable(offers));
  EXPECT_TRUE(directReachable(std::span(offers).first(2)));
  EXPECT_TRUE(directReachable(std::span(offers).first(1)));
}

}  // namespace
}  // namespace psdp::coll
