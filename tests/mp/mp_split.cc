// Multi-process tests of psdp_comm_split, run by psdp-run for several world sizes:
//   psdp-run -n 4 -- mp_split
// Splits into even/odd ranks (reversed by key) and into blocks of two, runs collectives on both from two
// threads at once, and splits with PSDP_SPLIT_NOCOLOR. Integer data, checked exactly.
#include <psdp/psdp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

int g_rank = 0;
int g_nranks = 1;
psdp::mp::Report g_report;

int32_t value(int parent_rank, size_t i, int round) {
  return static_cast<int32_t>((parent_rank + 1) * 100 + static_cast<int>(i % 997) + round);
}

// The parent ranks of a split's members, in the order of their new ranks.
std::vector<int> members(int color, bool reverse, int (*color_of)(int)) {
  std::vector<int> m;
  for (int r = 0; r < g_nranks; ++r) {
    if (color_of(r) == color) m.push_back(r);
  }
  if (reverse) std::reverse(m.begin(), m.end());
  return m;
}

int evenOdd(int r) {
  return r % 2;
}
int pairBlock(int r) {
  return r / 2;
}

// Checks the new communicator's rank and size, then runs `rounds` all-reduces and all-gathers on it.
void exercise(psdp_comm_h comm, const std::vector<int>& group, const std::string& name, int rounds) {
  int rank = -1, size = -1;
  psdp_status_t s = psdp_comm_rank(comm, &rank);
  if (s == PSDP_SUCCESS) s = psdp_comm_size(comm, &size);
  g_report.check(
      s == PSDP_SUCCESS && size == static_cast<int>(group.size()) && rank >= 0 && rank < size && group[rank] == g_rank,
      name + ": rank " + std::to_string(rank) + " size " + std::to_string(size) + ": " + why(comm, s));
  if (size != static_cast<int>(group.size()) || rank < 0 || rank >= size) return;
  const size_t n = 100003;
  std::vector<int32_t> buf(n), gathered(static_cast<size_t>(size) * 7);
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < n; ++i) buf[i] = value(g_rank, i, round);
    s = psdp_all_reduce(buf.data(), buf.data(), n, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
    bool ok = s == PSDP_SUCCESS;
    for (size_t i = 0; ok && i < n; ++i) {
      int32_t want = 0;
      for (int member : group) want += value(member, i, round);
      ok = buf[i] == want;
    }
    g_report.check(ok, name + " all-reduce round " + std::to_string(round) + ": " + why(comm, s));
    int32_t own[7];
    for (size_t i = 0; i < 7; ++i) own[i] = value(g_rank, i, round);
    s = psdp_all_gather(own, gathered.data(), 7, PSDP_INT32, comm, nullptr, nullptr);
    ok = s == PSDP_SUCCESS;
    for (size_t i = 0; ok && i < gathered.size(); ++i) ok = gathered[i] == value(group[i / 7], i % 7, round);
    g_report.check(ok, name + " all-gather round " + std::to_string(round) + ": " + why(comm, s));
  }
}

void finish(psdp_comm_h comm, const std::string& name) {
  psdp_status_t s = psdp_comm_finalize(comm);
  g_report.check(s == PSDP_SUCCESS, name + " finalize: " + why(comm, s));
}

}  // namespace

int main() {
  psdp_comm_h parent = psdp::mp::initFromEnv(g_report, &g_rank, &g_nranks);
  if (parent == nullptr) return 1;
  psdp_status_t s = PSDP_SUCCESS;

  // Even/odd, new ranks in reverse parent order (key = -rank).
  psdp_comm_h parity = nullptr;
  s = psdp_comm_split(parent, evenOdd(g_rank), -g_rank, nullptr, &parity);
  g_report.check(s == PSDP_SUCCESS && parity != nullptr, "split even/odd: " + why(parent, s));
  // Blocks of two, with a config of its own.
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  config.fragment_bytes = 4096;
  psdp_comm_h pairs = nullptr;
  s = psdp_comm_split(parent, pairBlock(g_rank), g_rank, &config, &pairs);
  g_report.check(s == PSDP_SUCCESS && pairs != nullptr, "split blocks: " + why(parent, s));
  // Rank 0 takes no part: it gets NULL, the others a communicator of nranks - 1.
  psdp_comm_h rest = nullptr;
  s = psdp_comm_split(parent, g_rank == 0 ? PSDP_SPLIT_NOCOLOR : 5, 0, nullptr, &rest);
  g_report.check(s == PSDP_SUCCESS && (g_rank == 0) == (rest == nullptr), "split with NOCOLOR: " + why(parent, s));
  g_report.check(psdp_comm_split(parent, -5, 0, nullptr, &rest) == PSDP_ERR_INVALID_ARGUMENT, "negative color refused");
  if (parity == nullptr || pairs == nullptr) return 1;

  // Both children at once, from two threads, while the parent is idle.
  std::thread other([&] { exercise(parity, members(evenOdd(g_rank), true, evenOdd), "even/odd", 5); });
  exercise(pairs, members(pairBlock(g_rank), false, pairBlock), "blocks", 5);
  other.join();

  if (rest != nullptr) {
    std::vector<int> group;
    for (int r = 1; r < g_nranks; ++r) group.push_back(r);
    exercise(rest, group, "without rank 0", 1);
    finish(rest, "without rank 0");
  }
  // The parent still works, and goes first: children do not depend on it.
  int32_t x = g_rank;
  s = psdp_all_reduce(&x, &x, 1, PSDP_INT32, PSDP_SUM, parent, nullptr, nullptr);
  g_report.check(s == PSDP_SUCCESS && x == g_nranks * (g_nranks - 1) / 2, "parent after splits: " + why(parent, s));
  finish(parent, "parent");
  g_report.check(psdp_comm_destroy(parent) == PSDP_SUCCESS, "destroy parent");
  exercise(parity, members(evenOdd(g_rank), true, evenOdd), "even/odd after the parent", 1);
  finish(parity, "even/odd");
  finish(pairs, "blocks");
  g_report.check(psdp_comm_destroy(pairs) == PSDP_SUCCESS && psdp_comm_destroy(parity) == PSDP_SUCCESS &&
                     (rest == nullptr || psdp_comm_destroy(rest) == PSDP_SUCCESS),
                 "destroy children");
  return g_report.finish();
}
