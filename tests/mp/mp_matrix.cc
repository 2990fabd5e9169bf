// Multi-process correctness matrix of the collectives, run by psdp-run for several world sizes:
//   psdp-run -n 4 -- mp_matrix [--long] [--shared all|even]
// Reduce-scatter and all-reduce for every dtype x op (premul-sum included) x in-place/out-of-place; all-gather
// and broadcast (roots 0 and nranks-1) for every dtype x in-place/out-of-place. Counts 0, 1, 7 and 1000, or
// with --long 1M+3 (the long tier). Every element of every result is checked exactly against
// mp_matrix_model.h; outputs start as sentinels, so an element nobody wrote shows, and the element just past
// recvbuf must keep its value. With --shared the buffers come from psdp_mem_alloc, on every rank (all) or on
// even ranks only (even: under PSDP_ALGORITHM=direct some ranks' buffers are then mapped, the others read
// with CMA, within one operation).
#include <psdp/psdp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "mp_matrix_model.h"
#include "mp_report.h"

using psdp::mp::dtypeSize;
using psdp::mp::kPeriod;
using psdp::mp::Op;
using psdp::mp::why;

namespace {

int g_rank = 0;
int g_nranks = 1;
psdp::mp::Report g_report;
int g_cases = 0;

// One period of a pattern, stored as the dtype, twice over: the kPeriod elements from any index on are
// contiguous at at(index), so a buffer is filled or checked by copying or comparing whole windows.
struct Tile {
  psdp_dtype_t dtype = PSDP_INT8;
  size_t elem = 1;
  std::array<unsigned char, 2 * kPeriod * 8> bytes{};
  const unsigned char* at(size_t index) const { return bytes.data() + (index % kPeriod) * elem; }
};

template <typename Fn>
void makeTile(Tile& tile, psdp_dtype_t dtype, Fn value_at) {
  tile.dtype = dtype;
  tile.elem = dtypeSize(dtype);
  for (size_t j = 0; j < 2 * kPeriod; ++j) psdp::mp::storeValue(dtype, value_at(j), tile.bytes.data() + j * tile.elem);
}

void makeSentinelTile(Tile& tile, psdp_dtype_t dtype) {
  tile.dtype = dtype;
  tile.elem = dtypeSize(dtype);
  for (size_t j = 0; j < 2 * kPeriod; ++j) psdp::mp::storeSentinel(dtype, tile.bytes.data() + j * tile.elem);
}

// Writes elements [first, first + n) of the tile's pattern to dst.
void fill(void* dst, size_t n, const Tile& tile, size_t first) {
  auto* out = static_cast<unsigned char*>(dst);
  for (size_t k = 0; k < n; k += kPeriod) {
    size_t len = std::min(kPeriod, n - k);
    std::memcpy(out + k * tile.elem, tile.at(first + k), len * tile.elem);
  }
}

// The first of n elements at got that differs in value from the pattern from `first` on, or n. Windows are
// compared as bytes first; only a window that differs is compared by value, where -0 equals 0 (the sign of
// a zero product is not part of the contract) and a NaN sentinel equals nothing.
size_t firstMismatch(const void* got, size_t n, const Tile& want, size_t first) {
  const auto* in = static_cast<const unsigned char*>(got);
  for (size_t k = 0; k < n; k += kPeriod) {
    size_t len = std::min(kPeriod, n - k);
    const unsigned char* w = want.at(first + k);
    if (std::memcmp(in + k * want.elem, w, len * want.elem) == 0) continue;
    for (size_t e = 0; e < len; ++e) {
      const unsigned char* g = in + (k + e) * want.elem;
      if (psdp::mp::loadValue(want.dtype, g) != psdp::mp::loadValue(want.dtype, w + e * want.elem)) return k + e;
    }
  }
  return n;
}

enum class Coll { kReduceScatter, kAllGather, kAllReduce, kBroadcast };

struct Case {
  Coll coll;
  psdp_dtype_t dtype;
  Op op;     // reductions only
  int root;  // broadcast only
  size_t count;
  bool in_place;
};

std::string describe(const Case& c) {
  static const char* const kColl[] = {"reduce-scatter", "all-gather", "all-reduce", "broadcast"};
  std::string s = std::string(kColl[static_cast<int>(c.coll)]) + " " + psdp::mp::dtypeName(c.dtype);
  if (c.coll == Coll::kReduceScatter || c.coll == Coll::kAllReduce) s += std::string(" ") + psdp::mp::opName(c.op);
  if (c.coll == Coll::kBroadcast) s += " root " + std::to_string(c.root);
  return s + " count " + std::to_string(c.count) + (c.in_place ? " in-place" : " out-of-place");
}

// Buffers for the largest case, allocated and touched once: first touch of fresh pages is slow on small
// VMs, and a per-case allocation would dominate the run time.
struct Buffers {
  unsigned char* send = nullptr;
  unsigned char* recv = nullptr;
  bool shared = false;

  bool allocate(size_t bytes, bool from_psdp) {
    shared = from_psdp;
    if (!shared) {
      send = new unsigned char[bytes]();  // value-initialised: touched here, once
      recv = new unsigned char[bytes]();
      return true;
    }
    void* s = nullptr;
    void* r = nullptr;
    if (psdp_mem_alloc(&s, bytes) != PSDP_SUCCESS || psdp_mem_alloc(&r, bytes) != PSDP_SUCCESS) return false;
    send = static_cast<unsigned char*>(s);
    recv = static_cast<unsigned char*>(r);
    return true;
  }
  void release() {
    if (shared) {
      g_report.check(psdp_mem_free(send) == PSDP_SUCCESS && psdp_mem_free(recv) == PSDP_SUCCESS, "psdp_mem_free");
    } else {
      delete[] send;
      delete[] recv;
    }
  }
};
Buffers g_buf;
Tile g_input, g_want, g_sentinel;

// The verdict of one case: the first thing found wrong (elements against a pattern from index `first` on,
// numbered from `index_base` in the message; then the element past the end), reported as one check.
struct Result {
  const Case& c;
  std::string failure;

  void elements(const void* got, size_t n, const Tile& want, size_t first, size_t index_base) {
    if (!failure.empty()) return;
    size_t bad = firstMismatch(got, n, want, first);
    if (bad == n) return;
    const auto* g = static_cast<const unsigned char*>(got) + bad * want.elem;
    failure = "element " + std::to_string(index_base + bad) + " is " + psdp::mp::formatValue(c.dtype, g) +
              ", expected " + psdp::mp::formatValue(c.dtype, want.at(first + bad));
  }
  void pastEnd(const void* got, const void* past, size_t index) {
    if (!failure.empty() || std::memcmp(got, past, dtypeSize(c.dtype)) == 0) return;
    failure = "element " + std::to_string(index) + " past the end is " + psdp::mp::formatValue(c.dtype, got) +
              ", expected it untouched: " + psdp::mp::formatValue(c.dtype, past);
  }
  void report(psdp_comm_h comm, psdp_status_t s) {
    if (s != PSDP_SUCCESS) failure = why(comm, s);
    ++g_cases;
    g_report.check(failure.empty(), describe(c) + ": " + failure);
  }
};

void runReduceScatter(psdp_comm_h comm, const Case& c, psdp_op_t op) {
  const size_t esz = dtypeSize(c.dtype), total = c.count * g_nranks;
  makeTile(g_input, c.dtype, [&](size_t j) { return psdp::mp::reduceInput(c.dtype, c.op, g_rank, g_nranks, j); });
  makeTile(g_want, c.dtype, [&](size_t j) { return psdp::mp::reduceExpected(c.dtype, c.op, g_nranks, j); });
  unsigned char* send = g_buf.send;
  fill(send, total, g_input, 0);
  fill(send + total * esz, 1, g_sentinel, 0);
  unsigned char* recv = c.in_place ? send + g_rank * c.count * esz : g_buf.recv;
  if (!c.in_place) fill(recv, c.count + 1, g_sentinel, 0);
  psdp_status_t s = psdp_reduce_scatter(send, recv, c.count, c.dtype, op, comm, nullptr, nullptr);
  // In place, the element past this rank's block is the next rank's input (sendbuf is const), or the
  // sentinel past the whole buffer.
  size_t past_index = (g_rank + 1) * c.count;
  const unsigned char* past = c.in_place && past_index < total ? g_input.at(past_index) : g_sentinel.at(0);
  Result r{c, {}};
  r.elements(recv, c.count, g_want, g_rank * c.count, 0);
  r.pastEnd(recv + c.count * esz, past, c.count);
  r.report(comm, s);
}

void runAllReduce(psdp_comm_h comm, const Case& c, psdp_op_t op) {
  const size_t esz = dtypeSize(c.dtype);
  makeTile(g_input, c.dtype, [&](size_t j) { return psdp::mp::reduceInput(c.dtype, c.op, g_rank, g_nranks, j); });
  makeTile(g_want, c.dtype, [&](size_t j) { return psdp::mp::reduceExpected(c.dtype, c.op, g_nranks, j); });
  unsigned char* send = g_buf.send;
  fill(send, c.count, g_input, 0);
  fill(send + c.count * esz, 1, g_sentinel, 0);
  unsigned char* recv = c.in_place ? send : g_buf.recv;
  if (!c.in_place) fill(recv, c.count + 1, g_sentinel, 0);
  psdp_status_t s = psdp_all_reduce(send, recv, c.count, c.dtype, op, comm, nullptr, nullptr);
  Result r{c, {}};
  r.elements(recv, c.count, g_want, 0, 0);
  r.pastEnd(recv + c.count * esz, g_sentinel.at(0), c.count);
  r.report(comm, s);
}

void runAllGather(psdp_comm_h comm, const Case& c) {
  const size_t esz = dtypeSize(c.dtype), total = c.count * g_nranks;
  unsigned char* recv = g_buf.recv;
  fill(recv, total + 1, g_sentinel, 0);
  unsigned char* send = c.in_place ? recv + g_rank * c.count * esz : g_buf.send;
  makeTile(g_input, c.dtype, [&](size_t j) { return psdp::mp::moveInput(c.dtype, g_rank, j); });
  fill(send, c.count, g_input, 0);
  psdp_status_t s = psdp_all_gather(send, recv, c.count, c.dtype, comm, nullptr, nullptr);
  Result r{c, {}};
  for (int b = 0; b < g_nranks; ++b) {
    makeTile(g_want, c.dtype, [&](size_t j) { return psdp::mp::moveInput(c.dtype, b, j); });
    r.elements(recv + b * c.count * esz, c.count, g_want, 0, b * c.count);
  }
  r.pastEnd(recv + total * esz, g_sentinel.at(0), total);
  r.report(comm, s);
}

void runBroadcast(psdp_comm_h comm, const Case& c) {
  const size_t esz = dtypeSize(c.dtype);
  makeTile(g_want, c.dtype, [&](size_t j) { return psdp::mp::moveInput(c.dtype, c.root, j); });
  unsigned char* recv = g_buf.recv;
  fill(recv, c.count + 1, g_sentinel, 0);
  unsigned char* send = c.in_place ? recv : g_buf.send;
  if (g_rank == c.root) fill(send, c.count, g_want, 0);
  psdp_status_t s = psdp_broadcast(send, recv, c.count, c.dtype, c.root, comm, nullptr, nullptr);
  Result r{c, {}};
  r.elements(recv, c.count, g_want, 0, 0);
  r.pastEnd(recv + c.count * esz, g_sentinel.at(0), c.count);
  r.report(comm, s);
}

// Every case of one dtype. The premul-sum op lives for the dtype's cases: ops are per (communicator, dtype).
void runDtype(psdp_comm_h comm, psdp_dtype_t dtype, const std::vector<size_t>& counts) {
  makeSentinelTile(g_sentinel, dtype);
  unsigned char scalar[8];
  psdp::mp::storeValue(dtype, psdp::mp::premulScalar(dtype, g_rank), scalar);
  psdp_op_t premul = PSDP_SUM;
  psdp_status_t s = psdp_op_create_premul_sum(comm, scalar, dtype, &premul);
  g_report.check(s == PSDP_SUCCESS,
                 std::string("create premul-sum op for ") + psdp::mp::dtypeName(dtype) + ": " + why(comm, s));
  const int n_ops = s == PSDP_SUCCESS ? psdp::mp::kNumOps : psdp::mp::kNumOps - 1;
  std::vector<int> roots = {0};
  if (g_nranks > 1) roots.push_back(g_nranks - 1);
  for (size_t count : counts) {
    for (bool in_place : {false, true}) {
      for (int k = 0; k < n_ops; ++k) {
        auto op = static_cast<Op>(k);
        psdp_op_t handle = op == Op::kPremulSum ? premul : static_cast<psdp_op_t>(k);
        runReduceScatter(comm, {Coll::kReduceScatter, dtype, op, 0, count, in_place}, handle);
        runAllReduce(comm, {Coll::kAllReduce, dtype, op, 0, count, in_place}, handle);
      }
      runAllGather(comm, {Coll::kAllGather, dtype, Op::kSum, 0, count, in_place});
      for (int root : roots) runBroadcast(comm, {Coll::kBroadcast, dtype, Op::kSum, root, count, in_place});
    }
  }
  if (n_ops == psdp::mp::kNumOps) {
    s = psdp_op_destroy(comm, premul);
    g_report.check(s == PSDP_SUCCESS, "destroy premul-sum op: " + why(comm, s));
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool long_counts = false;
  std::string shared = "none";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--long") == 0) {
      long_counts = true;
    } else if (std::strcmp(argv[i], "--shared") == 0 && i + 1 < argc) {
      shared = argv[++i];
    } else {
      shared = "bad";
    }
  }
  if (shared != "none" && shared != "all" && shared != "even") {
    std::fprintf(stderr, "usage: %s [--long] [--shared all|even]\n", argv[0]);
    return 2;
  }
  const std::vector<size_t> counts =
      long_counts ? std::vector<size_t>{(size_t{1} << 20) + 3} : std::vector<size_t>{0, 1, 7, 1000};
  psdp_comm_h comm = psdp::mp::initFromEnv(g_report, &g_rank, &g_nranks);
  if (comm == nullptr) return 1;
  const size_t bytes = (counts.back() * g_nranks + 1) * sizeof(double);
  const bool from_psdp = shared == "all" || (shared == "even" && g_rank % 2 == 0);
  if (!g_buf.allocate(bytes, from_psdp)) {
    g_report.check(false, "psdp_mem_alloc of 2 x " + std::to_string(bytes) + " bytes");
    return g_report.finish();
  }
  auto start = std::chrono::steady_clock::now();
  for (int d = 0; d < PSDP_NUM_DTYPES; ++d) runDtype(comm, static_cast<psdp_dtype_t>(d), counts);
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  if (g_rank == 0) {
    std::printf("mp_matrix: %d ranks, %d cases in %.1f s, buffers: %s\n", g_nranks, g_cases, took.count(),
                shared == "none" ? "private" : (shared == "all" ? "psdp_mem_alloc" : "psdp_mem_alloc on even ranks"));
  }
  g_buf.release();
  psdp_status_t s = psdp_comm_finalize(comm);
  g_report.check(s == PSDP_SUCCESS, "finalize: " + why(comm, s));
  g_report.check(psdp_comm_destroy(comm) == PSDP_SUCCESS, "destroy");
  return g_report.finish();
}
