// directReduce and directCopy against exact expectations: small integer values, so that every dtype's sum,
// max and avg has one right answer, at counts below, at and past a tile, into one or several outputs and in
// place; guard bytes around every destination catch a store past its end.
#include "coll/direct_kernels.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "coll/half.h"
#include "transport/process_identity.h"

namespace psdp::coll {
namespace {

constexpr size_t kGuard = 64;
constexpr std::byte kGuardByte{0x5a};

struct alignas(64) Tiles {
  std::byte result[kDirectFetchTileBytes];
  std::byte read[kDirectFetchTileBytes];
  DirectTiles get() { return {result, read}; }
};

// Rank 1 of this peer memory is this very process, which reads of other processes may read too.
const transport::PeerMemory& selfAsPeer() {
  static const transport::PeerMemory memory({transport::ProcessIdentity::self(), transport::ProcessIdentity::self()},
                                            0);
  return memory;
}

// Odd-numbered inputs as a peer process would see them: read out of the process (CMA), so that both ways
// of reading are checked against the same expectations.
enum class Reach { kLocal, kCma };

DirectSource sourceOf(const std::byte* data, size_t index, Reach reach) {
  if (reach == Reach::kLocal || index % 2 == 0) return DirectSource{data};
  return DirectSource{nullptr, &selfAsPeer(), 1, reinterpret_cast<uintptr_t>(data)};
}

// One (dtype, op): how to store an exact value, and the exact result of reducing rank values.
struct Case {
  const char* name;
  psdp_dtype_t dtype;
  psdp_op_t op;
  size_t elem_size;
  void (*store)(std::byte* at, double value);
  double (*expected)(const std::vector<int>& values);
};

template <typename T>
void storeAs(std::byte* at, double value) {
  T v = static_cast<T>(value);
  std::memcpy(at, &v, sizeof(T));
}

void storeFp16(std::byte* at, double value) {
  uint16_t v = floatToFp16(static_cast<float>(value));
  std::memcpy(at, &v, sizeof(v));
}

double sumOf(const std::vector<int>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}
double maxOf(const std::vector<int>& v) {
  return *std::max_element(v.begin(), v.end());
}
double floatAvg(const std::vector<int>& v) {
  return static_cast<float>(sumOf(v)) / static_cast<float>(v.size());  // as the kernel: a float division
}

const Case kCases[] = {
    {"float32 sum", PSDP_FLOAT32, PSDP_SUM, 4, storeAs<float>, sumOf},
    {"int32 max", PSDP_INT32, PSDP_MAX, 4, storeAs<int32_t>, maxOf},
    {"float32 avg", PSDP_FLOAT32, PSDP_AVG, 4, storeAs<float>, floatAvg},
    {"float16 sum", PSDP_FLOAT16, PSDP_SUM, 2, storeFp16, sumOf},
};

int valueOf(size_t rank, size_t i) {
  return static_cast<int>((i * 7 + rank * 13) % 23) - 11;
}

// Where the result goes: `separate` fresh buffers, plus inputs[0], the last input or every input (an
// all-reduce in place) when in place.
enum class InPlace { kNo, kFirstInput, kLastInput, kEveryInput };

void checkReduce(const Case& c, size_t ninputs, size_t count, size_t separate, InPlace in_place, bool streaming,
                 Reach reach = Reach::kLocal) {
  SCOPED_TRACE(::testing::Message() << c.name << ", " << ninputs << " inputs, count " << count << ", " << separate
                                    << " separate outputs, in place " << static_cast<int>(in_place));
  const size_t bytes = count * c.elem_size;
  // Each buffer: guard, data, guard.
  std::vector<std::vector<std::byte>> buffers(ninputs + separate,
                                              std::vector<std::byte>(bytes + 2 * kGuard, kGuardByte));
  auto data = [&](size_t b) { return buffers[b].data() + kGuard; };
  std::vector<DirectSource> inputs;
  for (size_t r = 0; r < ninputs; ++r) {
    for (size_t i = 0; i < count; ++i) c.store(data(r) + i * c.elem_size, valueOf(r, i));
    inputs.push_back(sourceOf(data(r), r, reach));
  }
  std::vector<std::byte*> outputs;
  std::vector<size_t> output_buffers;
  if (in_place == InPlace::kFirstInput) output_buffers.push_back(0);
  if (in_place == InPlace::kLastInput) output_buffers.push_back(ninputs - 1);
  for (size_t r = 0; in_place == InPlace::kEveryInput && r < ninputs; ++r) output_buffers.push_back(r);
  for (size_t k = 0; k < separate; ++k) output_buffers.push_back(ninputs + k);
  for (size_t b : output_buffers) outputs.push_back(data(b));

  std::vector<std::byte> want(bytes);
  std::vector<int> values(ninputs);
  for (size_t i = 0; i < count; ++i) {
    for (size_t r = 0; r < ninputs; ++r) values[r] = valueOf(r, i);
    c.store(want.data() + i * c.elem_size, c.expected(values));
  }

  auto tiles = std::make_unique<Tiles>();
  Status reduced = directReduce(findReduceKernel(c.dtype, c.op), inputs, outputs, count, c.elem_size,
                                static_cast<int>(ninputs), tiles->get(), streaming);
  ASSERT_TRUE(reduced.isOk()) << reduced.toString();

  for (size_t b : output_buffers) {
    const std::byte* got = data(b);
    auto diff = std::mismatch(want.begin(), want.end(), got).first;
    EXPECT_TRUE(diff == want.end()) << "output buffer " << b << " differs at element "
                                    << (diff - want.begin()) / static_cast<ptrdiff_t>(c.elem_size);
  }
  auto isGuard = [](std::byte x) { return x == kGuardByte; };
  for (const auto& buffer : buffers) {
    EXPECT_TRUE(std::all_of(buffer.begin(), buffer.begin() + kGuard, isGuard)) << "a store before a buffer";
    EXPECT_TRUE(std::all_of(buffer.end() - kGuard, buffer.end(), isGuard)) << "a store past a buffer";
  }
}

std::vector<size_t> countsFor(size_t elem_size) {
  const size_t stream_tile_elems = kDirectStreamTileBytes / elem_size;
  const size_t cache_tile_elems = kDirectCacheTileBytes / elem_size;
  const size_t cma_tile_elems = kDirectFetchTileBytes / elem_size;
  return {0,
          1,
          7,
          stream_tile_elems,
          3 * stream_tile_elems + 5,
          cache_tile_elems,
          3 * cache_tile_elems + 5,
          cma_tile_elems + 3};
}

TEST(DirectKernelsTest, ReducesTwoToFourInputsIntoSeparateOutputs) {
  for (const Case& c : kCases) {
    ASSERT_TRUE(findReduceKernel(c.dtype, c.op).isValid()) << c.name;
    for (size_t ninputs : {2, 3, 4}) {
      for (size_t count : countsFor(c.elem_size)) {
        for (size_t separate : {1, 3}) {
          checkReduce(c, ninputs, count, separate, InPlace::kNo, /*streaming=*/false);
          checkReduce(c, ninputs, count, separate, InPlace::kNo, /*streaming=*/true);
          checkReduce(c, ninputs, count, separate, InPlace::kNo, /*streaming=*/true, Reach::kCma);
        }
      }
    }
  }
}

TEST(DirectKernelsTest, ReducesInPlace) {
  for (const Case& c : kCases) {
    for (size_t ninputs : {2, 3, 4}) {
      for (size_t count : countsFor(c.elem_size)) {
        for (bool streaming : {false, true}) {
          checkReduce(c, ninputs, count, 0, InPlace::kFirstInput, streaming);
          checkReduce(c, ninputs, count, 0, InPlace::kLastInput, streaming);
          checkReduce(c, ninputs, count, 0, InPlace::kEveryInput, streaming);
          checkReduce(c, ninputs, count, 2, InPlace::kFirstInput, streaming);
          checkReduce(c, ninputs, count, 0, InPlace::kFirstInput, streaming, Reach::kCma);
        }
      }
    }
  }
}

TEST(DirectKernelsTest, CopyOntoItselfIsANoOp) {
  std::vector<std::byte> buffer(1000);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<std::byte>(i * 13);
  const std::vector<std::byte> before = buffer;
  EXPECT_TRUE(directCopy(buffer.data(), DirectSource{buffer.data()}, buffer.size(), /*streaming=*/false).isOk());
  EXPECT_TRUE(directCopy(buffer.data(), DirectSource{buffer.data()}, buffer.size(), /*streaming=*/true).isOk());
  EXPECT_EQ(buffer, before);
}

TEST(DirectKernelsTest, CopiesOddSizesToMisalignedDestinations) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{4099}, size_t{100003}}) {
    for (auto [misalign, streaming] :
         {std::pair{size_t{0}, false}, std::pair{size_t{0}, true}, std::pair{size_t{3}, true},
          std::pair{size_t{17}, true}, std::pair{size_t{17}, false}}) {
      SCOPED_TRACE(::testing::Message() << bytes << " bytes at +" << misalign << (streaming ? " streaming" : ""));
      std::vector<std::byte> src(bytes + 1);
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 1);
      std::vector<std::byte> dst(bytes + misalign + kGuard, kGuardByte);
      Reach reach = misalign == 3 ? Reach::kCma : Reach::kLocal;
      ASSERT_TRUE(directCopy(dst.data() + misalign, sourceOf(src.data() + 1, 1, reach), bytes, streaming).isOk());
      EXPECT_TRUE(std::equal(src.begin() + 1, src.end(), dst.begin() + static_cast<ptrdiff_t>(misalign)));
      EXPECT_TRUE(std::all_of(dst.begin(), dst.begin() + static_cast<ptrdiff_t>(misalign),
                              [](std::byte x) { return x == kGuardByte; }));
      EXPECT_TRUE(std::all_of(dst.end() - kGuard, dst.end(), [](std::byte x) { return x == kGuardByte; }));
    }
  }
}

// A read of memory the other process does not have fails with a system error naming the address, the pid
// and the rank.
TEST(DirectKernelsTest, AnUnreadableSourceIsASystemError) {
  std::vector<std::byte> dst(64, kGuardByte);
  DirectSource nowhere{nullptr, &selfAsPeer(), 1, 0x10};
  Status copied = directCopy(dst.data(), nowhere, dst.size(), /*streaming=*/false);
  EXPECT_EQ(copied.code(), PSDP_ERR_SYSTEM);
  EXPECT_NE(copied.message().find("pid " + std::to_string(getpid())), std::string::npos) << copied.message();
  EXPECT_NE(copied.message().find("0x10"), std::string::npos) << copied.message();
  EXPECT_NE(copied.message().find("rank 1"), std::string::npos) << copied.message();
  auto tiles = std::make_unique<Tiles>();
  std::vector<DirectSource> inputs{DirectSource{dst.data()}, nowhere};
  std::byte* out = dst.data();
  Status reduced = directReduce(findReduceKernel(PSDP_INT8, PSDP_SUM), inputs, std::span<std::byte* const>(&out, 1),
                                dst.size(), 1, 2, tiles->get(), false);
  EXPECT_EQ(reduced.code(), PSDP_ERR_SYSTEM);
}

}  // namespace
}  // namespace psdp::coll
