// Direct offers: the wire format and the reachability rule every rank applies to all offers and the
// placement the transport decided at connect.
#include "coll/direct_offer.h"

#include <gtest/gtest.h>

#include <vector>

#include "transport/process_identity.h"

namespace psdp::coll {
namespace {

using transport::MemoryHandle;
using transport::PeerMemory;
using transport::ProcessIdentity;
using transport::ReadAccess;

ProcessIdentity otherProcess(uint32_t offset = 1) {
  ProcessIdentity id = ProcessIdentity::self();
  id.pid += offset;
  return id;
}

class DirectOfferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<void*> shared = transport::allocateShareableMemory(kBytes);
    ASSERT_TRUE(shared.isOk()) << shared.status().toString();
    shared_ = static_cast<std::byte*>(shared.value());
  }
  void TearDown() override { EXPECT_TRUE(transport::freeShareableMemory(shared_).isOk()); }

  // An offer whose buffers are both shareable or both private, as `shareable` says.
  DirectOffer offerOf(bool shareable, ReadAccess reads = ReadAccess::kNo) {
    DirectOffer offer;
    std::byte* base = shareable ? shared_ : private_.data();
    offer.send = MemoryHandle::of(base, 64);
    offer.recv = MemoryHandle::of(base + 64, 64);
    offer.reads = reads;
    return offer;
  }

  static constexpr size_t kBytes = 4096;
  std::byte* shared_ = nullptr;
  std::vector<std::byte> private_ = std::vector<std::byte>(kBytes);
};

TEST_F(DirectOfferTest, EncodeDecodeKeepsEveryField) {
  DirectOffer offer = offerOf(true, ReadAccess::kYes);
  offer.recv = MemoryHandle::of(private_.data() + 3, 100);
  offer.cma = false;
  Result<DirectOffer> r = decodeDirectOffer(encodeDirectOffer(offer));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const DirectOffer& d = r.value();
  EXPECT_EQ(d.reads, ReadAccess::kYes);
  EXPECT_FALSE(d.cma);
  for (auto [got, want] : {std::pair{&d.send, &offer.send}, std::pair{&d.recv, &offer.recv}}) {
    EXPECT_EQ(got->address(), want->address());
    EXPECT_EQ(got->bytes(), want->bytes());
    EXPECT_EQ(got->shareable(), want->shareable());
  }
  EXPECT_EQ(encodeDirectOffer(d), encodeDirectOffer(offer)) << "every field survives the trip";
  offer.cma = true;
  Result<DirectOffer> allowing = decodeDirectOffer(encodeDirectOffer(offer));
  ASSERT_TRUE(allowing.isOk()) << allowing.status().toString();
  EXPECT_TRUE(allowing.value().cma);
}

TEST_F(DirectOfferTest, WrongLengthMagicReadAccessOrCmaIsAMismatch) {
  DirectOfferBytes bytes = encodeDirectOffer(offerOf(true));
  std::vector<std::byte> longer(bytes.begin(), bytes.end());
  longer.push_back(std::byte{0});
  EXPECT_EQ(decodeDirectOffer(longer).status().code(), PSDP_ERR_MISMATCH);
  EXPECT_EQ(decodeDirectOffer(std::span(bytes).first(kDirectOfferBytes - 1)).status().code(), PSDP_ERR_MISMATCH);
  EXPECT_EQ(decodeDirectOffer({}).status().code(), PSDP_ERR_MISMATCH);
  for (size_t at : {size_t{0}, size_t{4}}) {  // magic, version
    DirectOfferBytes bad = bytes;
    bad[at] ^= std::byte{0x40};
    EXPECT_EQ(decodeDirectOffer(bad).status().code(), PSDP_ERR_MISMATCH) << "byte " << at;
  }
  DirectOfferBytes bad_reads = bytes;
  bad_reads[8 + 2 * MemoryHandle::kEncodedBytes] = std::byte{7};
  EXPECT_EQ(decodeDirectOffer(bad_reads).status().code(), PSDP_ERR_MISMATCH);
  DirectOfferBytes bad_cma = bytes;
  bad_cma[8 + 2 * MemoryHandle::kEncodedBytes + 4] = std::byte{2};
  EXPECT_EQ(decodeDirectOffer(bad_cma).status().code(), PSDP_ERR_MISMATCH);
  EXPECT_TRUE(decodeDirectOffer(bytes).isOk());
}

// The rule option cma of each rank travels in its offer: reads happen only where every rank's rule allows
// them, so ranks whose tables differ there (their lanes differ) still decide alike.
TEST_F(DirectOfferTest, ReadsNeedEveryRanksRule) {
  std::vector<DirectOffer> offers = {offerOf(false, ReadAccess::kYes), offerOf(false, ReadAccess::kYes)};
  EXPECT_TRUE(everyRuleAllowsReads(offers));
  offers[1].cma = false;
  EXPECT_FALSE(everyRuleAllowsReads(offers));
  EXPECT_TRUE(directReachable(PeerMemory({ProcessIdentity::self(), otherProcess()}, 0), offers))
      << "reachable still: the phase falls back on the rule, not on reach";
}

TEST_F(DirectOfferTest, OneProcessAlwaysReachesItself) {
  PeerMemory memory({ProcessIdentity::self(), ProcessIdentity::self()}, 0);
  std::vector<DirectOffer> offers = {offerOf(false), offerOf(false)};
  EXPECT_TRUE(canReach(memory, offers, 0, 1));
  EXPECT_TRUE(directReachable(memory, offers));
  EXPECT_FALSE(needsPeerReads(memory, offers));
}

TEST_F(DirectOfferTest, AnotherLocalProcessNeedsBothTargetBuffersShareableOrReads) {
  PeerMemory memory({ProcessIdentity::self(), otherProcess()}, 0);
  std::vector<DirectOffer> offers = {offerOf(false), offerOf(true)};
  EXPECT_TRUE(canReach(memory, offers, 0, 1)) << "only the target's buffers matter";
  EXPECT_TRUE(mapsBuffers(memory, 0, offers[1], 1));
  offers[1].send = MemoryHandle::of(private_.data(), 64);
  EXPECT_FALSE(canReach(memory, offers, 0, 1));
  offers[1] = offerOf(true);
  offers[1].recv = MemoryHandle::of(private_.data(), 64);
  EXPECT_FALSE(canReach(memory, offers, 0, 1));
  offers[0].reads = ReadAccess::kYes;
  EXPECT_TRUE(canReach(memory, offers, 0, 1)) << "a rank that reads reaches private buffers";
  EXPECT_TRUE(needsPeerReads(memory, offers));
}

TEST_F(DirectOfferTest, AnotherBootOrPidNamespaceIsOutOfReach) {
  ProcessIdentity other_boot = otherProcess();
  other_boot.boot_id[0] ^= 1;
  ProcessIdentity other_namespace = ProcessIdentity::self();  // the same pid in another namespace
  other_namespace.pid_namespace += 1;
  for (const ProcessIdentity& elsewhere : {other_boot, other_namespace}) {
    PeerMemory memory({ProcessIdentity::self(), elsewhere}, 0);
    std::vector<DirectOffer> offers = {offerOf(true, ReadAccess::kYes), offerOf(true, ReadAccess::kYes)};
    EXPECT_FALSE(canReach(memory, offers, 0, 1));
    EXPECT_FALSE(directReachable(memory, offers));
  }
}

TEST_F(DirectOfferTest, ReachableOnlyIfEveryPairIs) {
  PeerMemory memory({ProcessIdentity::self(), ProcessIdentity::self(), otherProcess()}, 0);
  std::vector<DirectOffer> offers = {offerOf(true), offerOf(true), offerOf(true)};
  EXPECT_TRUE(directReachable(memory, offers));
  // Rank 1's private buffers are fine for rank 0, its own process, but not for rank 2: one pair of six.
  offers[1] = offerOf(false);
  EXPECT_FALSE(directReachable(memory, offers));
  EXPECT_TRUE(directReachable(*memory.subset({0, 1}, 0), std::span(offers).first(2)));
  offers[2].reads = ReadAccess::kYes;
  EXPECT_TRUE(directReachable(memory, offers)) << "rank 2 reads rank 1's buffers";
  EXPECT_TRUE(peerReadsUndecided(std::vector<DirectOffer>{offerOf(true, ReadAccess::kUnknown)}));
}

}  // namespace
}  // namespace psdp::coll
