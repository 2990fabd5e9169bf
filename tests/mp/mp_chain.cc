// Chains of nonblocking collectives across the teams of a layout, ordered by psdp_comm_after and never
// waited for in between, as a sharded optimizer step runs them per chunk:
//   reduce-scatter of the chunk's gradients in the shard team -> all-reduce of the owned piece in the replica
//   team -> all-gather of the pieces in the shard team.
// 8 chunks are posted back to back and only the last stage of each is waited for; every element must be
// the exact sum over the world. Then rank 0 aborts its shard team under a chain: every rank's all-reduce
// fails naming the abort, through its failed reduce-scatter or its replica team's members, and the world
// still works.
#include <psdp/psdp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

constexpr int kChunks = 8;
constexpr size_t kPiece = 3001;  // elements of one rank's piece of a chunk

int sizeOf(psdp_comm_h comm) {
  int n = 0;
  psdp_comm_size(comm, &n);
  return n;
}

// Gradient element i of chunk c on world rank r: small integers, so every sum is exact.
int32_t grad(int r, int c, size_t i) {
  return static_cast<int32_t>((r + 1) * (1 + c) + static_cast<int>(i % 11));
}

struct Chunk {
  std::vector<int32_t> grads;   // group * kPiece
  std::vector<int32_t> piece;   // kPiece: the shard team's reduction, then the world's
  std::vector<int32_t> params;  // group * kPiece: the gathered pieces
  psdp_request_h rs = nullptr, ar = nullptr, ag = nullptr;
};

void chains(psdp_comm_h shard, psdp_comm_h replica, int rank, int nranks, psdp::mp::Report& report) {
  const int group = sizeOf(shard);
  std::vector<Chunk> chunks(kChunks);
  for (int c = 0; c < kChunks; ++c) {
    Chunk& k = chunks[static_cast<size_t>(c)];
    k.grads.resize(static_cast<size_t>(group) * kPiece);
    for (size_t i = 0; i < k.grads.size(); ++i) k.grads[i] = grad(rank, c, i);
    k.piece.resize(kPiece);
    k.params.resize(k.grads.size());
    psdp_status_t s =
        psdp_reduce_scatter(k.grads.data(), k.piece.data(), kPiece, PSDP_INT32, PSDP_SUM, shard, nullptr, &k.rs);
    report.check(s == PSDP_SUCCESS, "chunk " + std::to_string(c) + " reduce-scatter: " + why(shard, s));
    s = psdp_comm_after(replica, k.rs);
    report.check(s == PSDP_SUCCESS, "chunk " + std::to_string(c) + " replica after: " + why(replica, s));
    s = psdp_all_reduce(k.piece.data(), k.piece.data(), kPiece, PSDP_INT32, PSDP_SUM, replica, nullptr, &k.ar);
    report.check(s == PSDP_SUCCESS, "chunk " + std::to_string(c) + " all-reduce: " + why(replica, s));
    s = psdp_comm_after(shard, k.ar);
    report.check(s == PSDP_SUCCESS, "chunk " + std::to_string(c) + " shard after: " + why(shard, s));
    s = psdp_all_gather(k.piece.data(), k.params.data(), kPiece, PSDP_INT32, shard, nullptr, &k.ag);
    report.check(s == PSDP_SUCCESS, "chunk " + std::to_string(c) + " all-gather: " + why(shard, s));
  }
  for (int c = kChunks - 1; c >= 0; --c) {
    Chunk& k = chunks[static_cast<size_t>(c)];
    psdp_status_t s = psdp_request_wait(k.ag);
    report.check(s == PSDP_SUCCESS, "chunk " + std::to_string(c) + " all-gather completes: " + why(shard, s));
    // Behind the all-gather, the stages before it have completed too.
    report.check(psdp_request_test(k.rs) == PSDP_SUCCESS && psdp_request_test(k.ar) == PSDP_SUCCESS,
                 "chunk " + std::to_string(c) + ": its reduce-scatter and all-reduce completed before its all-gather");
    bool exact = true;
    for (size_t i = 0; i < k.params.size() && exact; ++i) {
      int32_t sum = 0;
      for (int r = 0; r < nranks; ++r) sum += grad(r, c, i);
      exact = k.params[i] == sum;
      if (!exact) {
        report.check(false, "chunk " + std::to_string(c) + " element " + std::to_string(i) + ": " +
                                std::to_string(k.params[i]) + ", expected " + std::to_string(sum));
      }
    }
    report.check(exact, "chunk " + std::to_string(c) + " exact");
    for (psdp_request_h r : {k.rs, k.ar, k.ag}) psdp_request_free(r);
  }
}

// Rank 0 aborts its shard team under a chain posted on every rank. The chain's first link is held back
// until then: every rank but 0 orders its shard team after a world barrier that rank 0 joins only after the
// abort, and `sync` (a third team) tells rank 0 that every rank has posted. Every rank's all-reduce then fails
// naming the abort: on rank 0 and its shard partners through their failed reduce-scatter, on the others
// through their replica team, whose members failed. The world still works.
void failedLink(psdp_comm_h world, psdp_comm_h sync, psdp_comm_h shard, psdp_comm_h replica, int rank,
                psdp::mp::Report& report) {
  const int group = sizeOf(shard);
  std::vector<int32_t> grads(static_cast<size_t>(group) * kPiece, 1), piece(kPiece);
  psdp_request_h held = nullptr, rs = nullptr, ar = nullptr;
  psdp_status_t s = PSDP_SUCCESS;
  if (rank != 0) {
    s = psdp_barrier(world, &held);
    report.check(s == PSDP_SUCCESS, "post the world barrier: " + why(world, s));
    s = psdp_comm_after(shard, held);
    report.check(s == PSDP_SUCCESS, "the shard team after the world barrier: " + why(shard, s));
  }
  s = psdp_reduce_scatter(grads.data(), piece.data(), kPiece, PSDP_INT32, PSDP_SUM, shard, nullptr, &rs);
  report.check(s == PSDP_SUCCESS, "post the reduce-scatter: " + why(shard, s));
  s = psdp_comm_after(replica, rs);
  report.check(s == PSDP_SUCCESS, "the replica team after the reduce-scatter: " + why(replica, s));
  s = psdp_all_reduce(piece.data(), piece.data(), kPiece, PSDP_INT32, PSDP_SUM, replica, nullptr, &ar);
  report.check(s == PSDP_SUCCESS, "post the all-reduce: " + why(replica, s));
  s = psdp_barrier(sync, nullptr);
  report.check(s == PSDP_SUCCESS, "every rank posted: " + why(sync, s));
  if (rank == 0) {
    report.check(psdp_comm_abort(shard) == PSDP_SUCCESS, "abort the shard team");
    s = psdp_barrier(world, &held);
    report.check(s == PSDP_SUCCESS, "post the world barrier after the abort: " + why(world, s));
  }
  if (ar != nullptr) {
    s = psdp_request_wait(ar);
    std::string error = psdp_get_last_error(replica);
    report.check(s != PSDP_SUCCESS && error.find("psdp_comm_abort") != std::string::npos,
                 "the all-reduce after the failed reduce-scatter fails naming the abort: " + why(replica, s));
    psdp_request_free(ar);
  }
  for (psdp_request_h r : {rs, held}) {
    if (r == nullptr) continue;
    psdp_request_wait(r);
    psdp_request_free(r);
  }
  std::vector<int32_t> data(1000, rank + 1);
  s = psdp_all_reduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM, world, nullptr, nullptr);
  const int nranks = sizeOf(world);
  report.check(s == PSDP_SUCCESS && data.front() == nranks * (nranks + 1) / 2,
               "the world after the failed chain: " + why(world, s));
}

}  // namespace

int main() {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h world = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (world == nullptr) return 1;
  const int group = nranks % 2 == 0 ? 2 : nranks;
  psdp_comm_h shard = nullptr, replica = nullptr;
  psdp_status_t s = psdp_comm_split_layout(world, group, nullptr, &shard, &replica);
  report.check(s == PSDP_SUCCESS, "split_layout: " + why(world, s));
  if (s != PSDP_SUCCESS) return report.finish();

  chains(shard, replica, rank, nranks, report);
  // Only a rank's own communicators' requests, of one context, may be waited for.
  psdp_request_h own = nullptr;
  std::vector<int32_t> one(1, 1);
  s = psdp_all_reduce(one.data(), one.data(), 1, PSDP_INT32, PSDP_SUM, world, nullptr, &own);
  report.check(s == PSDP_SUCCESS, "a world all-reduce to wait for: " + why(world, s));
  report.check(psdp_comm_after(shard, nullptr) == PSDP_ERR_INVALID_ARGUMENT, "after NULL is an invalid argument");
  report.check(psdp_comm_after(nullptr, own) == PSDP_ERR_INVALID_ARGUMENT, "after on NULL is an invalid argument");
  report.check(psdp_comm_after(shard, own) == PSDP_SUCCESS, "the shard team after the world's all-reduce");
  psdp_request_wait(own);
  psdp_request_free(own);
  report.check(psdp_comm_after(shard, own) == PSDP_ERR_INVALID_USAGE, "after a freed request is invalid usage");

  psdp_comm_h sync = nullptr;
  s = psdp_comm_split(world, 0, rank, nullptr, &sync);
  report.check(s == PSDP_SUCCESS, "split a team to synchronise with: " + why(world, s));
  if (sync != nullptr) failedLink(world, sync, shard, replica, rank, report);
  report.check(psdp_comm_finalize(world) == PSDP_SUCCESS, "finalize the world");
  if (sync != nullptr) report.check(psdp_comm_finalize(sync) == PSDP_SUCCESS, "finalize the synchronising team");
  psdp_comm_destroy(sync);
  psdp_comm_destroy(shard);
  psdp_comm_destroy(replica);
  psdp_comm_destroy(world);
  return report.finish();
}
