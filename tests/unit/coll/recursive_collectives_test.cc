// Recursive halving/doubling (forced with PSDP_ALGORITHM=rhd semantics) at 1..8 ranks, threads over real
// UCX: every dtype x op (premul-sum and avg included) at small counts, counts 0/1/7/1000 in and out of
// place, bitwise identical all-reduce results on every rank for non-integer data, and the deterministic
// mode's promise: ring results that do not depend on chunk size, threshold or forced algorithm.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "coll/half.h"
#include "coll/host_collectives.h"
#include "unit/coll/collective_cases.h"

namespace psdp::coll::test {
namespace {

constexpr double kOpSeconds = 60;
constexpr size_t kBigChunk = size_t{1} << 20;  // room in one staging slot for every count here

enum class OpCase { kSum, kProd, kMin, kMax, kAvg, kPremul };
constexpr OpCase kOpCases[] = {OpCase::kSum, OpCase::kProd, OpCase::kMin, OpCase::kMax, OpCase::kAvg, OpCase::kPremul};
enum class Kind { kAllReduce, kReduceScatter, kAllGather };

bool isUnsigned(psdp_dtype_t d) {
  return d == PSDP_UINT8 || d == PSDP_UINT32 || d == PSDP_UINT64;
}

// Stores the integer v as element i of dtype d (modular for integers, exact for floats at these sizes).
void put(psdp_dtype_t d, void* buf, size_t i, int64_t v) {
  auto* p = static_cast<unsigned char*>(buf) + i * dtypeSize(d);
  auto store = [&](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (d) {
    case PSDP_INT8: store(static_cast<int8_t>(v)); break;
    case PSDP_UINT8: store(static_cast<uint8_t>(v)); break;
    case PSDP_INT32: store(static_cast<int32_t>(v)); break;
    case PSDP_UINT32: store(static_cast<uint32_t>(v)); break;
    case PSDP_INT64: store(v); break;
    case PSDP_UINT64: store(static_cast<uint64_t>(v)); break;
    case PSDP_FLOAT16: store(floatToFp16(static_cast<float>(v))); break;
    case PSDP_BFLOAT16: store(floatToBf16(static_cast<float>(v))); break;
    case PSDP_FLOAT32: store(static_cast<float>(v)); break;
    default: store(static_cast<double>(v)); break;
  }
}

// Avg: integer division toward zero, or one division in float32 (half types) or the dtype's precision.
void putAvg(psdp_dtype_t d, void* buf, size_t i, int64_t s, int n) {
  auto* p = static_cast<unsigned char*>(buf) + i * dtypeSize(d);
  auto store = [&](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (d) {
    case PSDP_FLOAT16: store(floatToFp16(static_cast<float>(s) / static_cast<float>(n))); break;
    case PSDP_BFLOAT16: store(floatToBf16(static_cast<float>(s) / static_cast<float>(n))); break;
    case PSDP_FLOAT32: store(static_cast<float>(s) / static_cast<float>(n)); break;
    case PSDP_FLOAT64: store(static_cast<double>(s) / n); break;
    default: put(d, buf, i, s / n); break;
  }
}

// Products stay within int8 over 8 ranks: factors 1, 2, -1 with at most a few 2s per element.
int64_t inputOf(psdp_dtype_t d, OpCase c, int rank, size_t i) {
  if (c == OpCase::kProd) {
    static const int64_t factors[] = {1, 2, -1, 1};
    return factors[(i + static_cast<size_t>(rank)) % (isUnsigned(d) ? 2 : 4)];
  }
  auto v = static_cast<int64_t>((i * 7 + static_cast<size_t>(rank) * 13) % 11);
  return isUnsigned(d) ? v : v - 5;
}

int64_t scalarOf(int rank) {
  return rank % 2 == 0 ? 2 : -1;
}

void putExpected(psdp_dtype_t d, OpCase c, int nranks, size_t i, void* out, size_t j) {
  int64_t acc = inputOf(d, c, 0, i) * (c == OpCase::kPremul ? scalarOf(0) : 1);
  for (int r = 1; r < nranks; ++r) {
    int64_t v = inputOf(d, c, r, i);
    switch (c) {
      case OpCase::kSum:
      case OpCase::kAvg: acc += v; break;
      case OpCase::kProd: acc *= v; break;
      case OpCase::kMin: acc = std::min(acc, v); break;
      case OpCase::kMax: acc = std::max(acc, v); break;
      case OpCase::kPremul: acc += scalarOf(r) * v; break;
    }
  }
  if (c == OpCase::kAvg) {
    putAvg(d, out, j, acc, nranks);
  } else {
    put(d, out, j, acc);
  }
}

Result<psdp_op_t> opFor(Collectives& coll, int rank, psdp_dtype_t d, OpCase c) {
  static const psdp_op_t builtin[] = {PSDP_SUM, PSDP_PROD, PSDP_MIN, PSDP_MAX, PSDP_AVG};
  if (c != OpCase::kPremul) return builtin[static_cast<int>(c)];
  std::vector<unsigned char> scalar(dtypeSize(d));
  put(d, scalar.data(), 0, scalarOf(rank));
  return coll.customOps().createPremulSum(scalar.data(), d);
}

// One collective on this rank; "" when the result (and, out of place, the untouched input) is right.
std::string runOne(Collectives& coll, int rank, int nranks, Kind kind, psdp_dtype_t d, OpCase c, size_t count,
                   bool in_place) {
  const size_t esize = dtypeSize(d);
  const auto n = static_cast<size_t>(nranks);
  const size_t send_count = kind == Kind::kReduceScatter ? count * n : count;
  const size_t recv_count = kind == Kind::kAllGather ? count * n : count;
  std::vector<unsigned char> send(send_count * esize), recv(recv_count * esize, 0xee), expect(recv_count * esize);
  const size_t first = kind == Kind::kReduceScatter ? count * static_cast<size_t>(rank) : 0;
  for (size_t i = 0; i < send_count; ++i)
    put(d, send.data(), i, inputOf(d, c, rank, kind == Kind::kAllGather ? first + i : i));
  if (kind == Kind::kAllGather) {
    for (size_t j = 0; j < recv_count; ++j)
      put(d, expect.data(), j, inputOf(d, c, static_cast<int>(j / count), j % count));
  } else {
    for (size_t j = 0; j < count; ++j) putExpected(d, c, nranks, first + j, expect.data(), j);
  }
  const std::vector<unsigned char> original = send;
  Deadline deadline = Deadline::after(kOpSeconds);
  Status status;
  unsigned char* out = recv.data();
  if (kind == Kind::kAllGather) {
    const unsigned char* in = send.data();
    if (in_place) {
      // memcpy wants valid pointers even for 0 bytes, and an empty vector's data() may be null.
      if (count > 0) std::memcpy(recv.data() + static_cast<size_t>(rank) * count * esize, send.data(), count * esize);
      in = recv.data() + static_cast<size_t>(rank) * count * esize;
    }
    status = coll.allGather(in, recv.data(), count, d, deadline);
  } else {
    auto op = opFor(coll, rank, d, c);
    if (!op.isOk()) return op.status().toString();
    if (in_place) out = send.data() + first * esize;
    status = kind == Kind::kAllReduce ? coll.allReduce(send.data(), out, count, d, op.value(), deadline)
                                      : coll.reduceScatter(send.data(), out, count, d, op.value(), deadline);
    if (c == OpCase::kPremul) {
      Status destroyed = coll.customOps().destroy(op.value());
      if (!destroyed.isOk()) return destroyed.toString();
    }
  }
  if (!status.isOk()) return status.toString();
  for (size_t j = 0; j < recv_count; ++j) {
    if (std::memcmp(out + j * esize, expect.data() + j * esize, esize) != 0) return "element " + std::to_string(j);
  }
  if (!in_place && send != original) return "sendbuf was modified";
  return "";
}

const char* kindName(Kind k) {
  return k == Kind::kAllReduce ? "all-reduce" : k == Kind::kReduceScatter ? "reduce-scatter" : "all-gather";
}

CollParams paramsOf(int rank, int nranks, size_t chunk, uint32_t context, psdp_algorithm_t algorithm) {
  CollParams params{rank, nranks, chunk, context, nullptr};
  params.algorithms = AlgorithmTable::make(algorithm, "").value();
  return params;
}

class RecursiveTest : public ::testing::TestWithParam<int> {};

// Every dtype x op at counts 1 and 7, out of place; then float32/int32 sums at 0/1/7/1000 in and out of
// place, for each kind.
TEST_P(RecursiveTest, ForcedRhdIsExact) {
  const int nranks = GetParam();
  UcxWorld* world = sharedWorld(nranks, PSDP_PROGRESS_THREAD);
  ASSERT_NE(world, nullptr);
  world->runRanks([&](int rank) {
    auto created =
        createHostCollectives(world->transport(rank), paramsOf(rank, nranks, kBigChunk, 300, PSDP_ALGORITHM_RHD));
    ASSERT_TRUE(created.isOk()) << created.status().toString();
    Collectives& coll = *created.value();
    for (Kind kind : {Kind::kAllReduce, Kind::kReduceScatter}) {
      for (int d = 0; d < PSDP_NUM_DTYPES; ++d) {
        for (OpCase c : kOpCases) {
          for (size_t count : {size_t{1}, size_t{7}}) {
            auto dtype = static_cast<psdp_dtype_t>(d);
            std::string wrong = runOne(coll, rank, nranks, kind, dtype, c, count, /*in_place=*/false);
            ASSERT_EQ(wrong, "") << nranks << " ranks, rank " << rank << ", " << kindName(kind) << " "
                                 << dtypeName(dtype) << " op " << static_cast<int>(c) << " count " << count;
          }
        }
      }
    }
    for (Kind kind : {Kind::kAllReduce, Kind::kReduceScatter, Kind::kAllGather}) {
      for (psdp_dtype_t dtype : {PSDP_FLOAT32, PSDP_INT32}) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
          for (bool in_place : {false, true}) {
            for (OpCase c : {OpCase::kSum, OpCase::kAvg, OpCase::kPremul}) {
              std::string wrong = runOne(coll, rank, nranks, kind, dtype, c, count, in_place);
              ASSERT_EQ(wrong, "") << nranks << " ranks, rank " << rank << ", " << kindName(kind) << " "
                                   << dtypeName(dtype) << " op " << static_cast<int>(c) << " count " << count
                                   << (in_place ? " in place" : " out of place");
            }
          }
        }
      }
    }
  });
}

// Non-integer data: every rank's all-reduce result must be the same bits, whichever algorithm ran.
// Returns each rank's result of an all-reduce of `count` random values (seeded by rank) on a fresh
// Collectives with `params` (rank filled in per rank).
std::vector<std::vector<unsigned char>> allReduceRandom(UcxWorld& world, const CollParams& base, psdp_dtype_t dtype,
                                                        psdp_op_t op, size_t count) {
  std::vector<std::vector<unsigned char>> results(static_cast<size_t>(world.size()));
  world.runRanks([&](int rank) {
    CollParams params = base;
    params.rank = rank;
    auto created = createHostCollectives(world.transport(rank), params);
    ASSERT_TRUE(created.isOk()) << created.status().toString();
    std::mt19937 gen(static_cast<unsigned>(1234 + rank));
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const size_t esize = dtypeSize(dtype);
    std::vector<unsigned char> data(count * esize);
    for (size_t i = 0; i < count; ++i) {
      float v = dist(gen) * 3.14159f;
      if (dtype == PSDP_BFLOAT16) {
        uint16_t b = floatToBf16(v);
        std::memcpy(data.data() + i * 2, &b, 2);
      } else {
        std::memcpy(data.data() + i * 4, &v, 4);
      }
    }
    Status status = created.value()->allReduce(data.data(), data.data(), count, dtype, op, Deadline::after(kOpSeconds));
    ASSERT_TRUE(status.isOk()) << status.toString();
    results[static_cast<size_t>(rank)] = std::move(data);
  });
  return results;
}

TEST_P(RecursiveTest, EveryRankGetsTheSameBits) {
  const int nranks = GetParam();
  UcxWorld* world = sharedWorld(nranks, PSDP_PROGRESS_THREAD);
  ASSERT_NE(world, nullptr);
  for (psdp_algorithm_t algorithm : {PSDP_ALGORITHM_RHD, PSDP_ALGORITHM_RING}) {
    for (psdp_dtype_t dtype : {PSDP_FLOAT32, PSDP_BFLOAT16}) {
      for (psdp_op_t op : {PSDP_SUM, PSDP_AVG, PSDP_MIN}) {
        auto results = allReduceRandom(*world, paramsOf(0, nranks, kBigChunk, 301, algorithm), dtype, op, 1001);
        for (int r = 1; r < nranks; ++r) {
          EXPECT_EQ(results[static_cast<size_t>(r)], results[0])
              << "rank " << r << " differs from rank 0, " << nranks << " ranks, algorithm " << algorithm << ", "
              << dtypeName(dtype) << " op " << op;
        }
      }
    }
  }
}

// PSDP_DETERMINISTIC=1: the ring runs whatever the algorithm, threshold or chunk size asks, and its result
// does not depend on the chunk size (the block layout depends on count and nranks only; each element is
// reduced in ring order from its block's owner). 100003 elements span many fragments at 1 KiB.
TEST_P(RecursiveTest, DeterministicResultIgnoresChunkThresholdAndAlgorithm) {
  const int nranks = GetParam();
  if (nranks == 1) GTEST_SKIP() << "one rank has nothing to reduce";
  UcxWorld* world = sharedWorld(nranks, PSDP_PROGRESS_THREAD);
  ASSERT_NE(world, nullptr);
  for (psdp_dtype_t dtype : {PSDP_FLOAT32, PSDP_BFLOAT16}) {
    for (size_t count : {size_t{1000}, size_t{100003}}) {
      std::vector<std::vector<unsigned char>> reference;
      uint32_t context = 310;
      for (size_t chunk : {size_t{1024}, size_t{4096}, kBigChunk}) {
        for (psdp_algorithm_t algorithm : {PSDP_ALGORITHM_AUTO, PSDP_ALGORITHM_RHD, PSDP_ALGORITHM_RING}) {
          CollParams params = paramsOf(0, nranks, chunk, context++, algorithm);
          params.deterministic = true;
          // A rule of rhd at every size, which deterministic mode must ignore too.
          if (algorithm == PSDP_ALGORITHM_AUTO) params.algorithms = AlgorithmTable::make(algorithm, "*:0-=rhd").value();
          auto results = allReduceRandom(*world, params, dtype, PSDP_SUM, count);
          if (reference.empty()) reference = results;
          for (int r = 0; r < nranks; ++r) {
            EXPECT_EQ(results[static_cast<size_t>(r)], reference[0])
                << "rank " << r << ", chunk " << chunk << ", algorithm " << algorithm << ", " << dtypeName(dtype)
                << " count " << count;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, RecursiveTest, ::testing::Range(1, 9), [](const ::testing::TestParamInfo<int>& info) {
  return std::to_string(info.param) + "Ranks";
});

}  // namespace
}  // namespace psdp::coll::test
