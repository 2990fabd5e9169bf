// psdp-perf-teams: two teams at once. The world is split twice into teams of all its ranks (so both share
// the world's transport and progress thread, PSDP_SPLIT_SHARE=1); a reduce-scatter runs on one and an
// all-gather on the other, each of `size` bytes (the whole vector, as nccl-tests counts it), float32 sum.
//
//   psdp-run -n 2 -- psdp-perf-teams -b 1M -e 256M -f 4
//   psdp-run -n 2 -- psdp-perf-teams -b 64K -e 64K -m 64
//
// Per size, the time of one pair (-m N: N pairs per iteration, on disjoint buffers) two ways, on the same
// buffers, interleaved iteration by iteration so that a noisy machine hits both alike:
//   sequential   the reduce-scatter, then the all-gather, each a blocking call;
//   interleaved  every reduce-scatter and all-gather of the iteration posted nonblocking (alternating
//                teams), then waited for;
// and sequential / interleaved: above 1, the two teams' collectives overlap. The slowest rank's time counts.
// -c 1 checks one interleaved pair exactly (integer-valued data) at every size. Options as psdp-perf's (the
// collective argument is ignored).
#include <psdp/psdp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "host_buffer.h"
#include "perf_options.h"

namespace {

using psdp::perf::Options;

[[noreturn]] void fail(psdp_comm_h comm, const char* what, psdp_status_t status) {
  std::fprintf(stderr, "psdp-perf-teams: %s failed: %s: %s\n", what, psdp_status_string(status),
               psdp_get_last_error(comm));
  // A failed communicator is destroyed at once (its peers are not waited for); the others it shares a
  // context with stop at exit.
  if (comm != nullptr) (void)psdp_comm_destroy(comm);
  std::exit(1);
}

#define TEAMS_CHECK(comm, call)                                          \
  do {                                                                   \
    psdp_status_t teams_status_ = (call);                                \
    if (teams_status_ != PSDP_SUCCESS) fail(comm, #call, teams_status_); \
  } while (0)

struct Teams {
  psdp_comm_h world, rs_team, ag_team;
  int rank, nranks;
};

// Buffers of -m pairs, each pair's slices `slice` bytes apart.
struct Buffers {
  psdp::perf::HostBuffer rs_send, rs_recv, ag_send, ag_recv;
  size_t slice;
  float* at(const psdp::perf::HostBuffer& b, int pair) const {
    return reinterpret_cast<float*>(b.data() + static_cast<size_t>(pair) * slice);
  }
};

// One pair's calls. count: elements of each rank's piece (the reduce-scatter's recvcount, the all-gather's
// sendcount).
psdp_status_t postPair(const Teams& t, const Buffers& b, int pair, size_t count, psdp_request_h* rs,
                       psdp_request_h* ag) {
  psdp_status_t s = psdp_reduce_scatter(b.at(b.rs_send, pair), b.at(b.rs_recv, pair), count, PSDP_FLOAT32, PSDP_SUM,
                                        t.rs_team, nullptr, rs);
  if (s != PSDP_SUCCESS) return s;
  return psdp_all_gather(b.at(b.ag_send, pair), b.at(b.ag_recv, pair), count, PSDP_FLOAT32, t.ag_team, nullptr, ag);
}

void runSequential(const Teams& t, const Buffers& b, int pairs, size_t count) {
  for (int p = 0; p < pairs; ++p) TEAMS_CHECK(t.world, postPair(t, b, p, count, nullptr, nullptr));
}

void runInterleaved(const Teams& t, const Buffers& b, int pairs, size_t count, std::vector<psdp_request_h>& reqs) {
  for (int p = 0; p < pairs; ++p) {
    TEAMS_CHECK(t.world,
                postPair(t, b, p, count, &reqs[2 * static_cast<size_t>(p)], &reqs[2 * static_cast<size_t>(p) + 1]));
  }
  for (size_t k = 0; k < 2 * static_cast<size_t>(pairs); ++k) {
    TEAMS_CHECK(t.world, psdp_request_wait(reqs[k]));
    TEAMS_CHECK(t.world, psdp_request_free(reqs[k]));
  }
}

// The slowest rank's time per pair of `iters` iterations of `run`.
template <typename Run>
double timePerPair(const Teams& t, int iters, int pairs, Run&& run) {
  TEAMS_CHECK(t.world, psdp_barrier(t.world, nullptr));
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) run();
  auto t1 = std::chrono::steady_clock::now();
  float mine = static_cast<float>(std::chrono::duration<double, std::micro>(t1 - t0).count() / iters / pairs);
  std::vector<float> all(static_cast<size_t>(t.nranks));
  TEAMS_CHECK(t.world, psdp_all_gather(&mine, all.data(), 1, PSDP_FLOAT32, t.world, nullptr, nullptr));
  return *std::max_element(all.begin(), all.end());
}

// Integer-valued input: every sum is exact. Element i of rank r's reduce-scatter input is r + 1 + i % 7; its
// all-gather input element i is 1000 r + i % 13.
void fillInputs(const Teams& t, const Buffers& b, size_t count) {
  float* rs = b.at(b.rs_send, 0);
  float* ag = b.at(b.ag_send, 0);
  for (size_t i = 0; i < count * static_cast<size_t>(t.nranks); ++i) rs[i] = static_cast<float>(t.rank + 1 + i % 7);
  for (size_t i = 0; i < count; ++i) ag[i] = static_cast<float>(1000 * t.rank + static_cast<int>(i % 13));
  std::fill(b.at(b.rs_recv, 0), b.at(b.rs_recv, 0) + count, -1.0f);
  std::fill(b.at(b.ag_recv, 0), b.at(b.ag_recv, 0) + count * static_cast<size_t>(t.nranks), -1.0f);
}

long long countWrong(const Teams& t, const Buffers& b, size_t count) {
  long long wrong = 0;
  const float* rs = b.at(b.rs_recv, 0);
  const float* ag = b.at(b.ag_recv, 0);
  const int n = t.nranks;
  for (size_t i = 0; i < count; ++i) {
    size_t global = static_cast<size_t>(t.rank) * count + i;
    wrong += rs[i] != static_cast<float>(n * (n + 1) / 2 + n * static_cast<int>(global % 7));
  }
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      wrong += ag[static_cast<size_t>(r) * count + i] != static_cast<float>(1000 * r + static_cast<int>(i % 13));
    }
  }
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string error;
  if (!psdp::perf::parseOptions(argc, argv, &o, &error)) {
    std::fprintf(stderr, "psdp-perf-teams: %s (psdp-perf --help lists the options)\n", error.c_str());
    return 2;
  }
  if (o.help) {
    std::fputs(
        "psdp-perf-teams [psdp-perf options]: a reduce-scatter and an all-gather on two teams, sequential\n"
        "and interleaved; see the comment at the top of perf/psdp_perf_teams.cc.\n",
        stdout);
    return 0;
  }
  Teams t{};
  TEAMS_CHECK(nullptr, psdp_comm_init_from_env(nullptr, &t.world));
  TEAMS_CHECK(t.world, psdp_comm_rank(t.world, &t.rank));
  TEAMS_CHECK(t.world, psdp_comm_size(t.world, &t.nranks));
  TEAMS_CHECK(t.world, psdp_comm_split(t.world, 0, t.rank, nullptr, &t.rs_team));
  TEAMS_CHECK(t.world, psdp_comm_split(t.world, 0, t.rank, nullptr, &t.ag_team));

  const size_t slice = (o.max_bytes + 4095) / 4096 * 4096;
  const size_t bytes = slice * static_cast<size_t>(o.agg);
  Buffers b{{bytes, o.huge_pages, o.shared_buffers},
            {bytes, o.huge_pages, o.shared_buffers},
            {bytes, o.huge_pages, o.shared_buffers},
            {bytes, o.huge_pages, o.shared_buffers},
            slice};
  if (!b.rs_send.data() || !b.rs_recv.data() || !b.ag_send.data() || !b.ag_recv.data()) {
    std::fprintf(stderr, "psdp-perf-teams: rank %d: cannot map 4 x %zu bytes of buffers\n", t.rank, bytes);
    return 1;
  }
  if (t.rank == 0) {
    std::printf(
        "# psdp-perf-teams: reduce-scatter on one team, all-gather on another, %d ranks, float sum, "
        "%d pairs per iteration, iters %d, warmup %d, buffers %s\n",
        t.nranks, o.agg, o.iters, o.warmup, o.shared_buffers ? "psdp_mem_alloc" : "private");
    std::printf("# %12s %8s %16s %16s %9s %7s\n", "size(B)", "pairs", "sequential(us)", "interleaved(us)", "speedup",
                "#wrong");
  }
  std::vector<psdp_request_h> reqs(2 * static_cast<size_t>(o.agg));
  long long total_wrong = 0;
  for (size_t size = o.min_bytes; size <= o.max_bytes; size = psdp::perf::nextSize(o, size)) {
    const size_t count = size / sizeof(float) / static_cast<size_t>(t.nranks);
    auto sequential = [&] { runSequential(t, b, o.agg, count); };
    auto interleaved = [&] { runInterleaved(t, b, o.agg, count, reqs); };
    for (int i = 0; i < o.warmup; ++i) sequential(), interleaved();
    // Alternating halves of the iterations, so that a change of the machine's pace shows in both.
    double seq_us = 0, int_us = 0;
    const int half = std::max(1, o.iters / 2);
    for (int round = 0; round < 2; ++round) {
      seq_us += timePerPair(t, half, o.agg, sequential) / 2;
      int_us += timePerPair(t, half, o.agg, interleaved) / 2;
    }
    long long wrong = 0;
    if (o.check) {
      fillInputs(t, b, count);
      runInterleaved(t, b, 1, count, reqs);
      long long mine = countWrong(t, b, count);
      int32_t m = static_cast<int32_t>(std::min<long long>(mine, INT32_MAX / t.nranks)), sum = 0;
      TEAMS_CHECK(t.world, psdp_all_reduce(&m, &sum, 1, PSDP_INT32, PSDP_SUM, t.world, nullptr, nullptr));
      wrong = sum;
      total_wrong += wrong;
    }
    if (t.rank == 0) {
      std::printf("  %12zu %8d %16.1f %16.1f %9.2f %7lld\n", count * sizeof(float) * static_cast<size_t>(t.nranks),
                  o.agg, seq_us, int_us, seq_us / int_us, wrong);
      std::fflush(stdout);
    }
  }
  TEAMS_CHECK(t.rs_team, psdp_comm_finalize(t.rs_team));
  TEAMS_CHECK(t.ag_team, psdp_comm_finalize(t.ag_team));
  TEAMS_CHECK(t.world, psdp_comm_finalize(t.world));
  psdp_comm_destroy(t.rs_team);
  psdp_comm_destroy(t.ag_team);
  psdp_comm_destroy(t.world);
  return total_wrong == 0 ? 0 : 1;
}
