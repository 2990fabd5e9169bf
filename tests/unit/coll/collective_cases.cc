#include "unit/coll/collective_cases.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "coll/host_collectives.h"

namespace psdp::coll::test {
namespace {

// Generous: the slowest case must finish on 2 cores under sanitizers, and a failed rank costs the others
// one deadline before they stop.
constexpr double kOpSeconds = 60;
constexpr int kSentinel = -7;

template <typename T>
T valueOf(int rank, size_t index) {
  return static_cast<T>(rank * 1000 + static_cast<int>(index % 997));
}

// The sum over all ranks of valueOf(r, index).
template <typename T>
T sumOf(int nranks, size_t index) {
  return static_cast<T>(1000 * nranks * (nranks - 1) / 2 + nranks * static_cast<int>(index % 997));
}

template <typename T>
std::vector<T> inputOf(int rank, size_t count) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = valueOf<T>(rank, i);
  return v;
}

// "" when got[i] == expected(i) for every i < count, else the first difference and how many there are.
template <typename T, typename Expected>
std::string mismatch(const char* what, const T* got, size_t count, Expected expected) {
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < count; ++i) {
    if (got[i] == expected(i)) continue;
    if (bad++ == 0) first = fmt::format("{}[{}] = {}, expected {}", what, i, got[i], expected(i));
  }
  return bad == 0 ? std::string() : fmt::format("{} ({} of {} elements wrong)", first, bad, count);
}

struct Outcome {
  Status status;
  std::string wrong;  // a data mismatch, when status is OK
};

template <typename T>
Outcome reduceScatter(Collectives& coll, const CollCase& c, int rank, int nranks) {
  size_t rc = c.count;
  std::vector<T> send = inputOf<T>(rank, rc * static_cast<size_t>(nranks));
  std::vector<T> recv(rc, static_cast<T>(kSentinel));
  T* out = c.in_place ? send.data() + static_cast<size_t>(rank) * rc : recv.data();
  Status status = coll.reduceScatter(send.data(), out, rc, c.dtype, PSDP_SUM, Deadline::after(kOpSeconds));
  if (!status.isOk()) return {status, {}};
  size_t base = static_cast<size_t>(rank) * rc;
  std::string wrong = mismatch("recvbuf", out, rc, [&](size_t j) { return sumOf<T>(nranks, base + j); });
  if (wrong.empty() && !c.in_place) {
    wrong = mismatch("sendbuf", send.data(), send.size(), [&](size_t i) { return valueOf<T>(rank, i); });
  }
  return {status, wrong};
}

template <typename T>
Outcome allGather(Collectives& coll, const CollCase& c, int rank, int nranks) {
  size_t sc = c.count;
  std::vector<T> send = inputOf<T>(rank, sc);
  std::vector<T> recv(sc * static_cast<size_t>(nranks), static_cast<T>(kSentinel));
  const T* in = send.data();
  if (c.in_place) {
    std::copy(send.begin(), send.end(), recv.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(rank) * sc));
    in = recv.data() + static_cast<size_t>(rank) * sc;
  }
  Status status = coll.allGather(in, recv.data(), sc, c.dtype, Deadline::after(kOpSeconds));
  if (!status.isOk()) return {status, {}};
  auto expected = [&](size_t i) { return valueOf<T>(static_cast<int>(i / sc), i % sc); };
  return {status, mismatch("recvbuf", recv.data(), recv.size(), expected)};
}

template <typename T>
Outcome allReduce(Collectives& coll, const CollCase& c, int rank, int nranks) {
  std::vector<T> send = inputOf<T>(rank, c.count);
  std::vector<T> recv(c.count, static_cast<T>(kSentinel));
  T* out = c.in_place ? send.data() : recv.data();
  Status status = coll.allReduce(send.data(), out, c.count, c.dtype, PSDP_SUM, Deadline::after(kOpSeconds));
  if (!status.isOk()) return {status, {}};
  std::string wrong = mismatch("recvbuf", out, c.count, [&](size_t i) { return sumOf<T>(nranks, i); });
  if (wrong.empty() && !c.in_place) {
    wrong = mismatch("sendbuf", send.data(), send.size(), [&](size_t i) { return valueOf<T>(rank, i); });
  }
  return {status, wrong};
}

template <typename T>
Outcome runTyped(Collectives& coll, const CollCase& c, int rank, int nranks) {
  switch (c.kind) {
    case CaseKind::kReduceScatter: return reduceScatter<T>(coll, c, rank, nranks);
    case CaseKind::kAllGather: return allGather<T>(coll, c, rank, nranks);
    case CaseKind::kAllReduce: return allReduce<T>(coll, c, rank, nranks);
  }
  return {Status::internal("unknown case kind"), {}};
}

Outcome runCase(Collectives& coll, const CollCase& c, int rank, int nranks) {
  if (c.dtype == PSDP_INT32) return runTyped<int32_t>(coll, c, rank, nranks);
  return runTyped<float>(coll, c, rank, nranks);
}

const char* modeName(psdp_progress_mode_t mode) {
  return mode == PSDP_PROGRESS_CALLER ? "caller" : "thread";
}

void runRank(UcxWorld& world, const std::vector<CollCase>& cases, size_t fragment_bytes, uint32_t context_id,
             int rank) {
  CollParams params{rank, world.size(), fragment_bytes, context_id, nullptr};
  auto created = createHostCollectives(world.transport(rank), params);
  if (!created.isOk()) {
    ADD_FAILURE() << "rank " << rank << ": " << created.status().toString();
    return;
  }
  Collectives& coll = *created.value();
  for (const CollCase& c : cases) {
    std::string where = fmt::format("{} ranks ({} progress), fragment {} bytes, rank {}, {}", world.size(),
                                    modeName(world.mode()), fragment_bytes, rank, caseName(c));
    Outcome outcome = runCase(coll, c, rank, world.size());
    if (!outcome.status.isOk()) {
      ADD_FAILURE() << where << ": " << outcome.status.toString();
      return;
    }
    if (!outcome.wrong.empty()) ADD_FAILURE() << where << ": " << outcome.wrong;
  }
}

}  // namespace

std::string caseName(const CollCase& c) {
  const char* kind = c.kind == CaseKind::kReduceScatter ? "reduce-scatter"
                     : c.kind == CaseKind::kAllGather   ? "all-gather"
                                                        : "all-reduce";
  return fmt::format("{} count {} {} {}", kind, c.count, dtypeName(c.dtype), c.in_place ? "in place" : "out of place");
}

std::vector<CollCase> combineCases(std::span<const CaseKind> kinds, std::span<const size_t> counts) {
  std::vector<CollCase> cases;
  for (CaseKind kind : kinds) {
    for (size_t count : counts) {
      for (psdp_dtype_t dtype : {PSDP_FLOAT32, PSDP_INT32}) {
        for (bool in_place : {false, true}) cases.push_back({kind, count, dtype, in_place});
      }
    }
  }
  return cases;
}

void runCases(UcxWorld& world, const std::vector<CollCase>& cases, std::span<const size_t> fragment_sizes) {
  for (size_t i = 0; i < fragment_sizes.size(); ++i) {
    // A context id per Collectives, as two communicators sharing a transport would have.
    auto context_id = static_cast<uint32_t>(i);
    world.runRanks([&](int rank) { runRank(world, cases, fragment_sizes[i], context_id, rank); });
  }
}

void runBarriers(UcxWorld& world, int rounds) {
  std::vector<std::atomic<int>> entered(static_cast<size_t>(rounds));
  world.runRanks([&](int rank) {
    CollParams params{rank, world.size(), kMinFragmentBytes, 100, nullptr};
    auto created = createHostCollectives(world.transport(rank), params);
    ASSERT_TRUE(created.isOk()) << created.status().toString();
    for (size_t round = 0; round < entered.size(); ++round) {
      entered[round].fetch_add(1);
      Status status = created.value()->barrier(Deadline::after(kOpSeconds));
      ASSERT_TRUE(status.isOk()) << "rank " << rank << ": " << status.toString();
      // Nobody leaves barrier k before everybody has entered it.
      EXPECT_EQ(entered[round].load(), world.size()) << "rank " << rank << " left barrier " << round << " early";
    }
  });
}

namespace {

std::unique_ptr<UcxWorld>& currentWorld() {
  static std::unique_ptr<UcxWorld> world;
  return world;
}

void releaseWorld() {
  std::unique_ptr<UcxWorld>& world = currentWorld();
  if (!world) return;
  Status closed = world->close();
  EXPECT_TRUE(closed.isOk()) << closed.toString();
  world.reset();
}

// Closes the last shared world while gtest still runs, rather than in a static destructor after main.
class SharedWorldRelease : public ::testing::Environment {
 public:
  void TearDown() override { releaseWorld(); }
};

[[maybe_unused]] const ::testing::Environment* const kSharedWorldRelease =
    ::testing::AddGlobalTestEnvironment(new SharedWorldRelease);

}  // namespace

UcxWorld* sharedWorld(int nranks, psdp_progress_mode_t mode) {
  std::unique_ptr<UcxWorld>& world = currentWorld();
  if (world && world->size() == nranks && world->mode() == mode) return world.get();
  releaseWorld();
  auto created = UcxWorld::create(nranks, mode);
  if (!created.isOk()) {
    ADD_FAILURE() << "cannot build a world of " << nranks << " ranks: " << created.status().toString();
    return nullptr;
  }
  world = std::move(created).value();
  return world.get();
}

}  // namespace psdp::coll::test
