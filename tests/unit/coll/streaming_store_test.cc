#include "coll/streaming_store.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace psdp::coll {
namespace {

// Every size around the streaming threshold and the 64-byte loop, at every destination and source
// misalignment within a line; the bytes just outside the destination must stay untouched.
TEST(StreamingCopyTest, CopiesExactlyWhateverTheSizeAndAlignment) {
  constexpr size_t kGuard = 64;
  const size_t sizes[] = {0,
                          1,
                          15,
                          63,
                          64,
                          4095,
                          kStreamingMinBytes - 1,
                          kStreamingMinBytes,
                          kStreamingMinBytes + 1,
                          kStreamingMinBytes + 63,
                          3 * kStreamingMinBytes + 17};
  std::vector<uint8_t> src(3 * kStreamingMinBytes + 17 + 2 * kGuard);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  std::vector<uint8_t> dst(src.size() + 2 * kGuard);
  for (size_t bytes : sizes) {
    for (size_t dst_shift : {0, 1, 8, 15, 33}) {
      for (size_t src_shift : {0, 3, 16}) {
        std::fill(dst.begin(), dst.end(), uint8_t{0xA5});
        uint8_t* d = dst.data() + kGuard + dst_shift;
        const uint8_t* s = src.data() + src_shift;
        streamingCopy(d, s, bytes);
        for (size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(d[i], s[i]) << "bytes " << bytes << " dst shift " << dst_shift << " src shift " << src_shift
                                << " at " << i;
        }
        for (size_t i = 0; i < kGuard; ++i) {
          ASSERT_EQ(d[-static_cast<ptrdiff_t>(i) - 1], 0xA5) << "wrote before dst, bytes " << bytes;
          ASSERT_EQ(d[bytes + i], 0xA5) << "wrote past dst, bytes " << bytes;
        }
      }
    }
  }
}

}  // namespace
}  // namespace psdp::coll
