// Reduce, gather, scatter, all-to-all, the -v collectives and point-to-point through the public API, every
// element checked exactly (small integers, so every sum is exact in every dtype used):
//   psdp-run -n 4 -- mp_more_collectives
// Counts from 0 to 100003 (many fragments at the default fragment size), every root, in place and out of
// place, per-rank counts with zeros, messages to every peer and to this rank, a nonblocking mix of every
// kind waited in reverse order, and a receive of the wrong size failing with a mismatch on a child
// communicator while the parent goes on.
#include <psdp/psdp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

int g_rank = 0;
int g_nranks = 1;
psdp::mp::Report g_report;

constexpr size_t kCounts[] = {0, 1, 7, 1000, 100003};
constexpr int32_t kUntouched = -7;

// Element i of what rank r contributes (to block b, for the personalised collectives).
int32_t value(int r, size_t i, int b = 0) {
  return static_cast<int32_t>((r + 1) * 100000 + b * 1000 + static_cast<int>(i % 997));
}

// memcpy of `count` elements; an empty vector's data() may be NULL, which memcpy must never get.
void copyInts(int32_t* dst, const int32_t* src, size_t count) {
  if (count > 0) std::memcpy(dst, src, count * sizeof(int32_t));
}

std::string tag(const char* what, size_t count, int root = -1, bool in_place = false) {
  std::string text = std::string(what) + " count " + std::to_string(count);
  if (root >= 0) text += " root " + std::to_string(root);
  return text + (in_place ? " in place" : "");
}

// Checks `got` against `want` element by element; reports the first difference.
void expectEqual(const std::vector<int32_t>& got, const std::vector<int32_t>& want, const std::string& what,
                 psdp_comm_h comm, psdp_status_t s) {
  if (s != PSDP_SUCCESS) {
    g_report.check(false, what + ": " + why(comm, s));
    return;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      g_report.check(false, what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
                                std::to_string(want[i]));
      return;
    }
  }
  g_report.check(true, what);
}

void testReduce(psdp_comm_h comm) {
  const auto n = static_cast<size_t>(g_nranks);
  for (size_t count : kCounts) {
    for (int root = 0; root < g_nranks; ++root) {
      for (psdp_op_t op : {PSDP_SUM, PSDP_MAX}) {
        for (bool in_place : {false, true}) {
          std::vector<int32_t> send(count), recv(count + 1, kUntouched), want(count + 1, kUntouched);
          for (size_t i = 0; i < count; ++i) send[i] = value(g_rank, i);
          if (g_rank == root) {
            for (size_t i = 0; i < count; ++i) {
              int32_t acc = value(0, i);
              for (size_t r = 1; r < n; ++r)
                acc =
                    op == PSDP_SUM ? acc + value(static_cast<int>(r), i) : std::max(acc, value(static_cast<int>(r), i));
              want[i] = acc;
            }
          }
          if (in_place && g_rank == root) copyInts(recv.data(), send.data(), count);
          const void* sendbuf = in_place && g_rank == root ? recv.data() : send.data();
          // The other ranks pass no recvbuf at all.
          void* recvbuf = g_rank == root ? recv.data() : nullptr;
          psdp_status_t s = psdp_reduce(sendbuf, recvbuf, count, PSDP_INT32, op, root, comm, nullptr, nullptr);
          expectEqual(recv, want, tag(op == PSDP_SUM ? "reduce sum" : "reduce max", count, root, in_place), comm, s);
        }
      }
    }
  }
  // float32 average, exact: sums of small integers, divided by the rank count once.
  std::vector<float> send(1000), recv(1000, -1.0f);
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>(value(g_rank, i) % 4096);
  psdp_status_t s =
      psdp_reduce(send.data(), recv.data(), send.size(), PSDP_FLOAT32, PSDP_AVG, 0, comm, nullptr, nullptr);
  bool ok = s == PSDP_SUCCESS;
  for (size_t i = 0; ok && g_rank == 0 && i < send.size(); ++i) {
    float sum = 0;
    for (int r = 0; r < g_nranks; ++r) sum += static_cast<float>(value(r, i) % 4096);
    ok = recv[i] == sum / static_cast<float>(g_nranks);
  }
  g_report.check(ok, "reduce avg float32: " + why(comm, s));
}

void testGatherScatter(psdp_comm_h comm) {
  const auto n = static_cast<size_t>(g_nranks);
  for (size_t count : kCounts) {
    for (int root = 0; root < g_nranks; ++root) {
      for (bool in_place : {false, true}) {
        const bool here = g_rank == root;
        // Gather: block r of the root's buffer is rank r's contribution.
        std::vector<int32_t> mine(count), all(n * count + 1, kUntouched), want(n * count + 1, kUntouched);
        for (size_t i = 0; i < count; ++i) mine[i] = value(g_rank, i);
        if (here) {
          for (size_t r = 0; r < n; ++r)
            for (size_t i = 0; i < count; ++i) want[r * count + i] = value(static_cast<int>(r), i);
        }
        const int32_t* sendbuf = mine.data();
        if (in_place && here) {
          copyInts(all.data() + static_cast<size_t>(root) * count, mine.data(), count);
          sendbuf = all.data() + static_cast<size_t>(root) * count;
        }
        psdp_status_t s =
            psdp_gather(sendbuf, here ? all.data() : nullptr, count, PSDP_INT32, root, comm, nullptr, nullptr);
        expectEqual(all, want, tag("gather", count, root, in_place), comm, s);

        // Scatter: block r of the root's buffer lands on rank r.
        std::vector<int32_t> source(n * count), out(count + 1, kUntouched), expect(count + 1, kUntouched);
        if (here) {
          for (size_t r = 0; r < n; ++r)
            for (size_t i = 0; i < count; ++i) source[r * count + i] = value(root, i, static_cast<int>(r));
        }
        for (size_t i = 0; i < count; ++i) expect[i] = value(root, i, g_rank);
        int32_t* recvbuf = out.data();
        if (in_place && here) recvbuf = source.data() + static_cast<size_t>(root) * count;
        s = psdp_scatter(here ? source.data() : nullptr, recvbuf, count, PSDP_INT32, root, comm, nullptr, nullptr);
        if (in_place && here) copyInts(out.data(), recvbuf, count);
        expectEqual(out, expect, tag("scatter", count, root, in_place), comm, s);
      }
    }
  }
  // uint8, odd sizes: no alignment luck.
  std::vector<uint8_t> bytes(13, static_cast<uint8_t>(g_rank + 1)), gathered(13 * n, 0);
  psdp_status_t s = psdp_gather(bytes.data(), gathered.data(), 13, PSDP_UINT8, 0, comm, nullptr, nullptr);
  bool ok = s == PSDP_SUCCESS;
  for (size_t i = 0; ok && g_rank == 0 && i < gathered.size(); ++i) ok = gathered[i] == i / 13 + 1;
  g_report.check(ok, "gather uint8 count 13: " + why(comm, s));
}

void testAllToAll(psdp_comm_h comm) {
  const auto n = static_cast<size_t>(g_nranks);
  for (size_t count : kCounts) {
    std::vector<int32_t> send(n * count), recv(n * count + 1, kUntouched), want(n * count + 1, kUntouched);
    for (size_t b = 0; b < n; ++b) {
      for (size_t i = 0; i < count; ++i) {
        send[b * count + i] = value(g_rank, i, static_cast<int>(b));
        want[b * count + i] = value(static_cast<int>(b), i, g_rank);
      }
    }
    psdp_status_t s = psdp_all_to_all(send.data(), recv.data(), count, PSDP_INT32, comm, nullptr, nullptr);
    expectEqual(recv, want, tag("all-to-all", count), comm, s);
  }
}

// Per-rank counts, the same on every rank: some zero, some larger than a fragment.
std::vector<std::vector<size_t>> countPatterns() {
  const auto n = static_cast<size_t>(g_nranks);
  std::vector<std::vector<size_t>> patterns;
  patterns.push_back(std::vector<size_t>(n, 0));
  patterns.push_back(std::vector<size_t>(n, 1000));
  std::vector<size_t> ramp(n), holes(n), one(n, 0);
  for (size_t r = 0; r < n; ++r) {
    ramp[r] = 1 + r * 40000;             // up to 120001 elements at W = 4
    holes[r] = r % 2 == 0 ? 0 : 300007;  // every other rank contributes nothing
  }
  one[n - 1] = 7;
  patterns.push_back(ramp);
  patterns.push_back(holes);
  patterns.push_back(one);
  return patterns;
}

std::string countsText(const std::vector<size_t>& counts) {
  std::string text;
  for (size_t c : counts) text += (text.empty() ? "" : ",") + std::to_string(c);
  return text;
}

void testVariable(psdp_comm_h comm) {
  const auto n = static_cast<size_t>(g_nranks);
  for (const std::vector<size_t>& counts : countPatterns()) {
    std::vector<size_t> offset(n + 1, 0);
    for (size_t r = 0; r < n; ++r) offset[r + 1] = offset[r] + counts[r];
    const size_t total = offset[n];
    const size_t own = counts[static_cast<size_t>(g_rank)];
    const size_t at = offset[static_cast<size_t>(g_rank)];
    for (bool in_place : {false, true}) {
      // All-gather-v: rank r's block at offset[r].
      std::vector<int32_t> mine(own), all(total + 1, kUntouched), want(total + 1, kUntouched);
      for (size_t i = 0; i < own; ++i) mine[i] = value(g_rank, i);
      for (size_t r = 0; r < n; ++r)
        for (size_t i = 0; i < counts[r]; ++i) want[offset[r] + i] = value(static_cast<int>(r), i);
      const int32_t* sendbuf = mine.data();
      if (in_place) {
        copyInts(all.data() + at, mine.data(), own);
        sendbuf = all.data() + at;
      }
      psdp_status_t s = psdp_all_gather_v(sendbuf, all.data(), counts.data(), PSDP_INT32, comm, nullptr, nullptr);
      expectEqual(all, want, "all-gather-v counts " + countsText(counts) + (in_place ? " in place" : ""), comm, s);

      // Reduce-scatter-v: this rank receives the sum of everyone's block at offset[rank].
      std::vector<int32_t> input(total), out(own + 1, kUntouched), expect(own + 1, kUntouched);
      for (size_t i = 0; i < total; ++i) input[i] = value(g_rank, i);
      for (size_t i = 0; i < own; ++i) {
        int32_t sum = 0;
        for (int r = 0; r < g_nranks; ++r) sum += value(r, at + i);
        expect[i] = sum;
      }
      int32_t* recvbuf = in_place ? input.data() + at : out.data();
      s = psdp_reduce_scatter_v(input.data(), recvbuf, counts.data(), PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
      if (in_place && s == PSDP_SUCCESS) copyInts(out.data(), recvbuf, own);
      expectEqual(out, expect, "reduce-scatter-v counts " + countsText(counts) + (in_place ? " in place" : ""), comm,
                  s);
    }
  }
}

// Reduce-scatter-v with every op: int64 for sum, prod (factors of 1 and 2), min and max, float32 for avg (one
// rounding of an exact sum, as the reference does it).
void testVariableOps(psdp_comm_h comm) {
  const auto n = static_cast<size_t>(g_nranks);
  std::vector<size_t> counts(n), offset(n + 1, 0);
  for (size_t r = 0; r < n; ++r) counts[r] = 1000 * r + 7;
  for (size_t r = 0; r < n; ++r) offset[r + 1] = offset[r] + counts[r];
  const size_t own = counts[static_cast<size_t>(g_rank)], at = offset[static_cast<size_t>(g_rank)];
  auto input = [](int r, size_t i) { return static_cast<int64_t>((i * 7 + static_cast<size_t>(r) * 3) % 11) - 5; };
  for (psdp_op_t op : {PSDP_SUM, PSDP_PROD, PSDP_MIN, PSDP_MAX}) {
    auto element = [&](int r, size_t i) { return op == PSDP_PROD ? (input(r, i) & 1) + 1 : input(r, i); };
    std::vector<int64_t> send(offset[n]), recv(own + 1, kUntouched);
    for (size_t i = 0; i < send.size(); ++i) send[i] = element(g_rank, i);
    psdp_status_t s =
        psdp_reduce_scatter_v(send.data(), recv.data(), counts.data(), PSDP_INT64, op, comm, nullptr, nullptr);
    bool ok = s == PSDP_SUCCESS && recv[own] == kUntouched;
    for (size_t i = 0; ok && i < own; ++i) {
      int64_t acc = element(0, at + i);
      for (int r = 1; r < g_nranks; ++r) {
        int64_t v = element(r, at + i);
        acc = op == PSDP_SUM    ? acc + v
              : op == PSDP_PROD ? acc * v
              : op == PSDP_MIN  ? std::min(acc, v)
                                : std::max(acc, v);
      }
      ok = recv[i] == acc;
    }
    g_report.check(ok, "reduce-scatter-v int64 op " + std::to_string(op) + ": " + why(comm, s));
  }
  std::vector<float> send(offset[n]), recv(own + 1, -1.0f);
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>(input(g_rank, i));
  psdp_status_t s =
      psdp_reduce_scatter_v(send.data(), recv.data(), counts.data(), PSDP_FLOAT32, PSDP_AVG, comm, nullptr, nullptr);
  bool ok = s == PSDP_SUCCESS;
  for (size_t i = 0; ok && i < own; ++i) {
    float sum = 0;
    for (int r = 0; r < g_nranks; ++r) sum += static_cast<float>(input(r, at + i));
    ok = recv[i] == sum / static_cast<float>(g_nranks);
  }
  g_report.check(ok, "reduce-scatter-v float32 avg: " + why(comm, s));
}

psdp_status_t waitAll(std::vector<psdp_request_h>& requests, bool reverse) {
  psdp_status_t first = PSDP_SUCCESS;
  for (size_t k = 0; k < requests.size(); ++k) {
    psdp_request_h& request = requests[reverse ? requests.size() - 1 - k : k];
    psdp_status_t s = psdp_request_wait(request);
    if (first == PSDP_SUCCESS) first = s;
    psdp_request_free(request);
  }
  requests.clear();
  return first;
}

void testPointToPoint(psdp_comm_h comm) {
  const int right = (g_rank + 1) % g_nranks;
  const int left = (g_rank + g_nranks - 1) % g_nranks;
  for (size_t count : kCounts) {
    // Every rank to its right neighbour, and 4 messages to every peer and itself, matched in posting order.
    std::vector<int32_t> send(count), recv(count + 1, kUntouched), want(count + 1, kUntouched);
    for (size_t i = 0; i < count; ++i) {
      send[i] = value(g_rank, i);
      want[i] = value(left, i);
    }
    std::vector<psdp_request_h> requests(2);
    psdp_status_t s = psdp_recv(recv.data(), count, PSDP_INT32, left, comm, nullptr, &requests[0]);
    if (s == PSDP_SUCCESS) s = psdp_send(send.data(), count, PSDP_INT32, right, comm, nullptr, &requests[1]);
    if (s == PSDP_SUCCESS) s = waitAll(requests, false);
    expectEqual(recv, want, tag("send to the right", count), comm, s);

    constexpr int kRepeats = 4;
    const auto n = static_cast<size_t>(g_nranks);
    std::vector<std::vector<int32_t>> outgoing(n * kRepeats, std::vector<int32_t>(count));
    std::vector<std::vector<int32_t>> incoming(n * kRepeats, std::vector<int32_t>(count, kUntouched));
    for (int peer = 0; s == PSDP_SUCCESS && peer < g_nranks; ++peer) {
      for (int k = 0; s == PSDP_SUCCESS && k < kRepeats; ++k) {
        std::vector<int32_t>& out = outgoing[static_cast<size_t>(peer * kRepeats + k)];
        for (size_t i = 0; i < count; ++i) out[i] = value(g_rank, i, peer * kRepeats + k);
        requests.emplace_back();
        s = psdp_send(out.data(), count, PSDP_INT32, peer, comm, nullptr, &requests.back());
        if (s != PSDP_SUCCESS) requests.pop_back();
        if (s != PSDP_SUCCESS) break;
        requests.emplace_back();
        s = psdp_recv(incoming[static_cast<size_t>(peer * kRepeats + k)].data(), count, PSDP_INT32, peer, comm, nullptr,
                      &requests.back());
        if (s != PSDP_SUCCESS) requests.pop_back();
      }
    }
    psdp_status_t waited = waitAll(requests, true);
    if (s == PSDP_SUCCESS) s = waited;
    bool ok = s == PSDP_SUCCESS;
    for (int peer = 0; ok && peer < g_nranks; ++peer)
      for (int k = 0; ok && k < kRepeats; ++k)
        for (size_t i = 0; ok && i < count; ++i)
          ok = incoming[static_cast<size_t>(peer * kRepeats + k)][i] == value(peer, i, g_rank * kRepeats + k);
    g_report.check(ok, tag("4 messages to every peer and to itself, in order", count) + ": " + why(comm, s));
  }
  // Blocking: rank 0 sends to the last rank, which receives.
  if (g_nranks > 1 && (g_rank == 0 || g_rank == g_nranks - 1)) {
    std::vector<int32_t> data(1000), want(1000);
    for (size_t i = 0; i < data.size(); ++i) want[i] = value(0, i);
    if (g_rank == 0) data = want;
    psdp_status_t s = g_rank == 0
                          ? psdp_send(data.data(), data.size(), PSDP_INT32, g_nranks - 1, comm, nullptr, nullptr)
                          : psdp_recv(data.data(), data.size(), PSDP_INT32, 0, comm, nullptr, nullptr);
    expectEqual(data, want, "blocking send and recv", comm, s);
  }
  // A blocking call to itself could never complete.
  int32_t x = 0;
  psdp_status_t s = psdp_send(&x, 1, PSDP_INT32, g_rank, comm, nullptr, nullptr);
  g_report.check(s == PSDP_ERR_INVALID_ARGUMENT && std::strstr(psdp_get_last_error(comm), "itself") != nullptr,
                 "a blocking send to itself is an invalid argument: " + why(comm, s));
}

// Every kind posted nonblocking back to back, then waited newest first.
void testMixed(psdp_comm_h comm) {
  const auto n = static_cast<size_t>(g_nranks);
  constexpr size_t kCount = 5000;
  const int root = g_nranks - 1;
  std::vector<int32_t> a(kCount), reduced(kCount, kUntouched), gathered(n * kCount, kUntouched);
  std::vector<int32_t> a2a_in(n * kCount), a2a_out(n * kCount, kUntouched), vin(n * kCount), vout(kCount, kUntouched);
  std::vector<int32_t> p2p(kCount, kUntouched);
  std::vector<size_t> counts(n, kCount);
  for (size_t i = 0; i < kCount; ++i) a[i] = value(g_rank, i);
  for (size_t i = 0; i < n * kCount; ++i) a2a_in[i] = value(g_rank, i % kCount, static_cast<int>(i / kCount));
  for (size_t i = 0; i < n * kCount; ++i) vin[i] = value(g_rank, i);
  std::vector<psdp_request_h> requests(7);
  const int right = (g_rank + 1) % g_nranks, left = (g_rank + g_nranks - 1) % g_nranks;
  psdp_status_t s =
      psdp_reduce(a.data(), reduced.data(), kCount, PSDP_INT32, PSDP_SUM, root, comm, nullptr, &requests[0]);
  if (s == PSDP_SUCCESS) s = psdp_recv(p2p.data(), kCount, PSDP_INT32, left, comm, nullptr, &requests[1]);
  if (s == PSDP_SUCCESS) s = psdp_gather(a.data(), gathered.data(), kCount, PSDP_INT32, 0, comm, nullptr, &requests[2]);
  if (s == PSDP_SUCCESS)
    s = psdp_all_to_all(a2a_in.data(), a2a_out.data(), kCount, PSDP_INT32, comm, nullptr, &requests[3]);
  if (s == PSDP_SUCCESS)
    s = psdp_reduce_scatter_v(vin.data(), vout.data(), counts.data(), PSDP_INT32, PSDP_SUM, comm, nullptr,
                              &requests[4]);
  if (s == PSDP_SUCCESS) s = psdp_send(a.data(), kCount, PSDP_INT32, right, comm, nullptr, &requests[5]);
  if (s == PSDP_SUCCESS) s = psdp_barrier(comm, &requests[6]);
  if (s != PSDP_SUCCESS) {
    g_report.check(false, "mixed: posting: " + why(comm, s));
    return;
  }
  s = waitAll(requests, true);
  bool ok = s == PSDP_SUCCESS;
  for (size_t i = 0; ok && i < kCount; ++i) {
    int32_t sum = 0, vsum = 0;
    for (int r = 0; r < g_nranks; ++r) {
      sum += value(r, i);
      vsum += value(r, static_cast<size_t>(g_rank) * kCount + i);
    }
    ok = (g_rank != root || reduced[i] == sum) && vout[i] == vsum && p2p[i] == value(left, i);
    for (size_t r = 0; ok && r < n; ++r) {
      ok = a2a_out[r * kCount + i] == value(static_cast<int>(r), i, g_rank) &&
           (g_rank != 0 || gathered[r * kCount + i] == value(static_cast<int>(r), i));
    }
  }
  g_report.check(ok, "mixed nonblocking kinds waited newest first: " + why(comm, s));
}

// A receive that expects more than was sent fails with a mismatch; on a child, so the parent goes on.
void testSizeMismatch(psdp_comm_h parent) {
  if (g_nranks < 2) return;
  psdp_comm_h child = nullptr;
  psdp_status_t s = psdp_comm_split(parent, 0, g_rank, nullptr, &child);
  g_report.check(s == PSDP_SUCCESS, "split for the size mismatch: " + why(parent, s));
  if (s != PSDP_SUCCESS) return;
  std::vector<int32_t> data(100, 1);
  if (g_rank == 0) s = psdp_send(data.data(), 50, PSDP_INT32, 1, child, nullptr, nullptr);
  if (g_rank == 1) s = psdp_recv(data.data(), 100, PSDP_INT32, 0, child, nullptr, nullptr);
  if (g_rank == 1) {
    g_report.check(s == PSDP_ERR_MISMATCH && std::strstr(psdp_get_last_error(child), "recv") != nullptr,
                   "a receive of the wrong size fails with a mismatch naming the receive: " + why(child, s));
  }
  // Every rank learns: the next collective on the child fails (rank 1's failure reached the others).
  s = psdp_barrier(child, nullptr);
  g_report.check(s != PSDP_SUCCESS, "the child is failed on every rank: " + why(child, s));
  g_report.check(psdp_comm_destroy(child) == PSDP_SUCCESS, "destroy the failed child");
  s = psdp_barrier(parent, nullptr);
  g_report.check(s == PSDP_SUCCESS, "the parent is unaffected: " + why(parent, s));
}

}  // namespace

int main() {
  psdp_comm_h comm = psdp::mp::initFromEnv(g_report, &g_rank, &g_nranks);
  if (comm == nullptr) return 1;
  testReduce(comm);
  testGatherScatter(comm);
  testAllToAll(comm);
  testVariable(comm);
  testVariableOps(comm);
  testPointToPoint(comm);
  testMixed(comm);
  testSizeMismatch(comm);
  psdp_status_t s = psdp_comm_finalize(comm);
  g_report.check(s == PSDP_SUCCESS, "finalize: " + why(comm, s));
  g_report.check(psdp_comm_destroy(comm) == PSDP_SUCCESS, "destroy");
  return g_report.finish();
}
