// The shared-segment allocator: sizes, the address lookup at and past the edges, ids, and bad frees.
#include "transport/shared_segment.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <set>
#include <string>

namespace psdp::transport {
namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// A segment freed at the end of the scope, unless the test frees it itself.
struct Segment {
  explicit Segment(size_t bytes) {
    Result<void*> r = allocateSharedSegment(bytes);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    if (r.isOk()) base = static_cast<std::byte*>(r.value());
  }
  ~Segment() {
    if (base != nullptr) (void)freeSharedSegment(base);
  }
  std::byte* base = nullptr;
};

TEST(SharedSegmentTest, ZeroBytesIsInvalid) {
  Result<void*> r = allocateSharedSegment(0);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), PSDP_ERR_INVALID_ARGUMENT);
}

TEST(SharedSegmentTest, RoundsUpToPagesAndFromTwoMiBToHugePages) {
  constexpr size_t kHuge = size_t{2} << 20;
  for (auto [asked, size] :
       {std::pair{size_t{1}, kPage}, std::pair{kPage + 1, 2 * kPage}, std::pair{kHuge + 1, 2 * kHuge}}) {
    Segment s(asked);
    ASSERT_NE(s.base, nullptr);
    std::optional<SegmentRef> ref = findSharedSegment(s.base, asked);
    ASSERT_TRUE(ref.has_value()) << asked;
    EXPECT_EQ(ref->bytes, size) << asked;
    EXPECT_EQ(ref->offset, 0u);
    EXPECT_GE(ref->fd, 0);
  }
}

TEST(SharedSegmentTest, MemoryIsZeroedAndWritable) {
  Segment s(3 * kPage);
  ASSERT_NE(s.base, nullptr);
  EXPECT_TRUE(std::all_of(s.base, s.base + 3 * kPage, [](std::byte b) { return b == std::byte{0}; }));
  for (size_t i = 0; i < 3 * kPage; ++i) s.base[i] = static_cast<std::byte>(i * 7);
  for (size_t i = 0; i < 3 * kPage; i += 997) ASSERT_EQ(s.base[i], static_cast<std::byte>(i * 7)) << i;
}

TEST(SharedSegmentTest, FindsRangesInsideAndUpToTheEndOnly) {
  Segment s(1000);
  ASSERT_NE(s.base, nullptr);
  std::optional<SegmentRef> whole = findSharedSegment(s.base, kPage);
  ASSERT_TRUE(whole.has_value());
  std::optional<SegmentRef> inside = findSharedSegment(s.base + 100, 50);
  ASSERT_TRUE(inside.has_value());
  EXPECT_EQ(inside->id, whole->id);
  EXPECT_EQ(inside->fd, whole->fd);
  EXPECT_EQ(inside->bytes, kPage);
  EXPECT_EQ(inside->offset, 100u);
  std::optional<SegmentRef> at_end = findSharedSegment(s.base + kPage - 8, 8);
  ASSERT_TRUE(at_end.has_value());
  EXPECT_EQ(at_end->offset, kPage - 8);
  std::optional<SegmentRef> empty = findSharedSegment(s.base + 10, 0);
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->offset, 10u);
  // Ranges that cross an edge: whatever lies next to the segment, no one segment holds them.
  EXPECT_FALSE(findSharedSegment(s.base + kPage - 8, 9).has_value());
  EXPECT_FALSE(findSharedSegment(s.base, kPage + 1).has_value());
  EXPECT_FALSE(findSharedSegment(s.base - 1, 2).has_value());
  int on_stack = 0;
  EXPECT_FALSE(findSharedSegment(&on_stack, sizeof(on_stack)).has_value());
}

TEST(SharedSegmentTest, IdsAreUniqueAndNeverReused) {
  std::set<uint64_t> ids;
  for (int i = 0; i < 4; ++i) {
    Segment s(64);
    ASSERT_NE(s.base, nullptr);
    std::optional<SegmentRef> ref = findSharedSegment(s.base, 64);
    ASSERT_TRUE(ref.has_value());
    EXPECT_TRUE(ids.insert(ref->id).second) << "id " << ref->id << " again";
  }  // each freed before the next: the address may come back, the id must not
  Segment a(64), b(64);
  ASSERT_NE(a.base, nullptr);
  ASSERT_NE(b.base, nullptr);
  EXPECT_NE(findSharedSegment(a.base, 1)->id, findSharedSegment(b.base, 1)->id);
  EXPECT_NE(findSharedSegment(a.base, 1)->fd, findSharedSegment(b.base, 1)->fd);
}

TEST(SharedSegmentTest, FreeingWhatIsNotALiveSegmentIsInvalid) {
  int on_stack = 0;
  Status s = freeSharedSegment(&on_stack);
  EXPECT_EQ(s.code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("psdp_mem_alloc"), std::string::npos) << s.message();

  Result<void*> r = allocateSharedSegment(kPage * 2);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  auto* base = static_cast<std::byte*>(r.value());
  EXPECT_EQ(freeSharedSegment(base + kPage).code(), PSDP_ERR_INVALID_ARGUMENT) << "an interior pointer";
  ASSERT_TRUE(freeSharedSegment(base).isOk());
  EXPECT_FALSE(findSharedSegment(base, 1).has_value()) << "a freed segment is forgotten";
  s = freeSharedSegment(base);
  EXPECT_EQ(s.code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("not a live buffer"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace psdp::transport
