// Every dtype with every op (sum, prod, min, max, avg, premul-sum) through the ring all-reduce and
// reduce-scatter, at 2 and 3 ranks (threads over real UCX), with 1 KiB fragments so that blocks span
// several fragments. Data are small integers chosen so that results are exact and in range for every dtype
// (prod over {1, 2, -1}); each rank's premul-sum scalar is its own (2 or -1), as NCCL allows.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "coll/half.h"
#include "coll/host_collectives.h"
#include "unit/coll/collective_cases.h"

namespace psdp::coll::test {
namespace {

constexpr double kOpSeconds = 60;
constexpr size_t kFragmentBytes = 1024;
constexpr size_t kCounts[] = {1, 7, 1000};

enum class OpCase { kSum, kProd, kMin, kMax, kAvg, kPremul };
constexpr OpCase kOpCases[] = {OpCase::kSum, OpCase::kProd, OpCase::kMin, OpCase::kMax, OpCase::kAvg, OpCase::kPremul};

const char* opCaseName(OpCase c) {
  const char* names[] = {"sum", "prod", "min", "max", "avg", "premul-sum"};
  return names[static_cast<int>(c)];
}

bool isUnsigned(psdp_dtype_t d) {
  return d == PSDP_UINT8 || d == PSDP_UINT32 || d == PSDP_UINT64;
}

// Writes the integer v as element i of a buffer of dtype d (modular for integer types, exact for floats
// at these magnitudes).
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

// The avg of a sum s: integer division toward zero, or one division in the dtype's precision (float32 for
// the half types, whose kernels compute in float32), then the store.
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

int64_t inputOf(psdp_dtype_t d, OpCase c, int rank, size_t i) {
  if (c == OpCase::kProd) {
    static const int64_t factors[] = {1, 2, -1};
    return factors[(i + static_cast<size_t>(rank)) % (isUnsigned(d) ? 2 : 3)];
  }
  auto v = static_cast<int64_t>((i * 7 + static_cast<size_t>(rank) * 13) % 11);
  return isUnsigned(d) ? v : v - 5;
}

int64_t scalarOf(int rank) {
  return rank % 2 == 0 ? 2 : -1;
}

// Element i of the full result over nranks, written into `out` at position j.
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

struct Ctx {
  Collectives& coll;
  int rank;
  int nranks;
};

Result<psdp_op_t> opFor(Ctx& ctx, psdp_dtype_t d, OpCase c) {
  static const psdp_op_t builtin[] = {PSDP_SUM, PSDP_PROD, PSDP_MIN, PSDP_MAX, PSDP_AVG};
  if (c != OpCase::kPremul) return builtin[static_cast<int>(c)];
  std::vector<unsigned char> scalar(dtypeSize(d));
  put(d, scalar.data(), 0, scalarOf(ctx.rank));
  return ctx.coll.customOps().createPremulSum(scalar.data(), d);
}

std::string runOne(Ctx& ctx, psdp_dtype_t d, OpCase c, size_t count, bool all_reduce) {
  const size_t esize = dtypeSize(d);
  const size_t total = all_reduce ? count : count * static_cast<size_t>(ctx.nranks);
  std::vector<unsigned char> send(total * esize), recv(count * esize, 0xee), expect(count * esize);
  for (size_t i = 0; i < total; ++i) put(d, send.data(), i, inputOf(d, c, ctx.rank, i));
  const size_t first = all_reduce ? 0 : count * static_cast<size_t>(ctx.rank);
  for (size_t j = 0; j < count; ++j) putExpected(d, c, ctx.nranks, first + j, expect.data(), j);
  auto op = opFor(ctx, d, c);
  if (!op.isOk()) return op.status().toString();
  Deadline deadline = Deadline::after(kOpSeconds);
  Status status = all_reduce ? ctx.coll.allReduce(send.data(), recv.data(), count, d, op.value(), deadline)
                             : ctx.coll.reduceScatter(send.data(), recv.data(), count, d, op.value(), deadline);
  if (c == OpCase::kPremul) {
    Status destroyed = ctx.coll.customOps().destroy(op.value());
    if (!destroyed.isOk()) return destroyed.toString();
  }
  if (!status.isOk()) return status.toString();
  for (size_t j = 0; j < count; ++j) {
    if (std::memcmp(recv.data() + j * esize, expect.data() + j * esize, esize) != 0) {
      return "element " + std::to_string(j) + " differs";
    }
  }
  return "";
}

void runRank(UcxWorld& world, int rank, uint32_t context_id) {
  CollParams params{rank, world.size(), kFragmentBytes, context_id, nullptr};
  auto created = createHostCollectives(world.transport(rank), params);
  ASSERT_TRUE(created.isOk()) << created.status().toString();
  Ctx ctx{*created.value(), rank, world.size()};
  for (int d = 0; d < PSDP_NUM_DTYPES; ++d) {
    auto dtype = static_cast<psdp_dtype_t>(d);
    for (OpCase c : kOpCases) {
      for (size_t count : kCounts) {
        for (bool all_reduce : {true, false}) {
          std::string wrong = runOne(ctx, dtype, c, count, all_reduce);
          ASSERT_EQ(wrong, "") << world.size() << " ranks, rank " << rank << ", "
                               << (all_reduce ? "all-reduce " : "reduce-scatter ") << dtypeName(dtype) << " "
                               << opCaseName(c) << " count " << count;
        }
      }
    }
  }
}

void runWorld(int nranks) {
  UcxWorld* world = sharedWorld(nranks, PSDP_PROGRESS_THREAD);
  ASSERT_NE(world, nullptr);
  world->runRanks([&](int rank) { runRank(*world, rank, 200); });
}

TEST(ReduceOpsTest, EveryDtypeAndOpTwoRanks) {
  runWorld(2);
}

TEST(ReduceOpsTest, EveryDtypeAndOpThreeRanks) {
  runWorld(3);
}

// A premul-sum op used after destroy, or with another dtype, is an invalid argument that leaves the
// collectives usable (the next all-reduce on every rank still matches up).
TEST(ReduceOpsTest, StaleOrMismatchedPremulOpIsInvalidAndHarmless) {
  UcxWorld* world = sharedWorld(2, PSDP_PROGRESS_THREAD);
  ASSERT_NE(world, nullptr);
  world->runRanks([&](int rank) {
    CollParams params{rank, world->size(), kFragmentBytes, 201, nullptr};
    auto created = createHostCollectives(world->transport(rank), params);
    ASSERT_TRUE(created.isOk()) << created.status().toString();
    Collectives& coll = *created.value();
    float two = 2.0f;
    auto op = coll.customOps().createPremulSum(&two, PSDP_FLOAT32);
    ASSERT_TRUE(op.isOk());
    std::vector<float> data(10, 1.0f);
    Deadline deadline = Deadline::after(kOpSeconds);
    EXPECT_EQ(coll.allReduce(data.data(), data.data(), 10, PSDP_FLOAT64, op.value(), deadline).code(),
              PSDP_ERR_INVALID_ARGUMENT);
    ASSERT_TRUE(coll.customOps().destroy(op.value()).isOk());
    EXPECT_EQ(coll.allReduce(data.data(), data.data(), 10, PSDP_FLOAT32, op.value(), deadline).code(),
              PSDP_ERR_INVALID_ARGUMENT);
    ASSERT_TRUE(coll.allReduce(data.data(), data.data(), 10, PSDP_FLOAT32, PSDP_SUM, deadline).isOk());
    EXPECT_EQ(data[0], 2.0f);
  });
}

}  // namespace
}  // namespace psdp::coll::test
