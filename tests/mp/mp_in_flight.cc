// Many collectives in flight on one communicator: 64 nonblocking collectives of mixed kinds and sizes (empty to
// 1.2 MB, so that small ones take halving/doubling, large ones the ring or the direct path, and several
// contend for staging), half of them on psdp_mem_alloc buffers, posted back to back and then waited for in an
// order of each rank's own. Every element is checked exactly (integer sums). Run under psdp-run.
// With --wait-all the ops go round-robin to the world, a split sharing its context and a split with its own,
// and all 64 requests, shuffled per rank, are waited for with one psdp_request_wait_all.
#include <psdp/psdp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

constexpr int kOps = 64;
constexpr size_t kCounts[] = {0, 1, 257, 4096, 65536 + 7, 300000};
enum class Kind { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kBarrier };
constexpr Kind kKinds[] = {Kind::kAllReduce, Kind::kReduceScatter, Kind::kAllGather,    Kind::kBroadcast,
                           Kind::kAllReduce, Kind::kBarrier,       Kind::kReduceScatter};

int32_t value(int rank, size_t i, int op) {
  return static_cast<int32_t>((rank + 1) * 100 + static_cast<int>(i % 97) + op);
}

// Host memory from psdp_mem_alloc or the heap, freed with the matching call.
class Buffer {
 public:
  Buffer(size_t count, bool shared) : count_(count), shared_(shared && count > 0) {
    if (shared_) {
      void* p = nullptr;
      if (psdp_mem_alloc(&p, count * sizeof(int32_t)) == PSDP_SUCCESS) data_ = static_cast<int32_t*>(p);
    } else {
      heap_.resize(count + 1);
      data_ = heap_.data();
    }
  }
  ~Buffer() {
    if (shared_) psdp_mem_free(data_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  int32_t* data() const { return data_; }
  size_t count() const { return count_; }

 private:
  size_t count_;
  bool shared_;
  std::vector<int32_t> heap_;
  int32_t* data_ = nullptr;
};

struct Op {
  Kind kind;
  size_t count;  // elements per rank's block (reduce-scatter, all-gather) or of the vector
  int root = 0;
  std::unique_ptr<Buffer> send, recv;
  psdp_request_h request = nullptr;
};

std::string name(const Op& op, int index) {
  static const char* names[] = {"all-reduce", "reduce-scatter", "all-gather", "broadcast", "barrier"};
  return std::string(names[static_cast<int>(op.kind)]) + " #" + std::to_string(index) + " (count " +
         std::to_string(op.count) + ")";
}

psdp_status_t post(Op& op, int index, int rank, int nranks, psdp_comm_h comm) {
  const bool shared = index % 2 == 1;
  const size_t n = op.count, total = n * static_cast<size_t>(nranks);
  switch (op.kind) {
    case Kind::kAllReduce:
      op.send = std::make_unique<Buffer>(n, shared);
      op.recv = std::make_unique<Buffer>(n, shared);
      for (size_t i = 0; i < n; ++i) op.send->data()[i] = value(rank, i, index);
      return psdp_all_reduce(op.send->data(), op.recv->data(), n, PSDP_INT32, PSDP_SUM, comm, nullptr, &op.request);
    case Kind::kReduceScatter:
      op.send = std::make_unique<Buffer>(total, shared);
      op.recv = std::make_unique<Buffer>(n, shared);
      for (size_t i = 0; i < total; ++i) op.send->data()[i] = value(rank, i, index);
      return psdp_reduce_scatter(op.send->data(), op.recv->data(), n, PSDP_INT32, PSDP_SUM, comm, nullptr, &op.request);
    case Kind::kAllGather:
      op.send = std::make_unique<Buffer>(n, shared);
      op.recv = std::make_unique<Buffer>(total, shared);
      for (size_t i = 0; i < n; ++i) op.send->data()[i] = value(rank, i, index);
      return psdp_all_gather(op.send->data(), op.recv->data(), n, PSDP_INT32, comm, nullptr, &op.request);
    case Kind::kBroadcast:
      op.root = index % nranks;
      op.recv = std::make_unique<Buffer>(n, shared);
      for (size_t i = 0; i < n; ++i) op.recv->data()[i] = rank == op.root ? value(rank, i, index) : -1;
      return psdp_broadcast(op.recv->data(), op.recv->data(), n, PSDP_INT32, op.root, comm, nullptr, &op.request);
    case Kind::kBarrier: return psdp_barrier(comm, &op.request);
  }
  return PSDP_ERR_INTERNAL;
}

// The first wrong element as text, or "".
std::string check(const Op& op, int index, int rank, int nranks) {
  auto sum = [&](size_t i) {
    int32_t s = 0;
    for (int r = 0; r < nranks; ++r) s += value(r, i, index);
    return s;
  };
  const size_t n = op.count;
  for (size_t i = 0; op.kind != Kind::kBarrier && i < (op.kind == Kind::kAllGather ? n * nranks : n); ++i) {
    int32_t expected = 0;
    switch (op.kind) {
      case Kind::kAllReduce: expected = sum(i); break;
      case Kind::kReduceScatter: expected = sum(static_cast<size_t>(rank) * n + i); break;
      case Kind::kAllGather: expected = value(static_cast<int>(i / n), i % n, index); break;
      case Kind::kBroadcast: expected = value(op.root, i, index); break;
      case Kind::kBarrier: break;
    }
    if (op.recv->data()[i] != expected) {
      return "element " + std::to_string(i) + " is " + std::to_string(op.recv->data()[i]) + ", expected " +
             std::to_string(expected);
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const bool wait_all = argc > 1 && std::string(argv[1]) == "--wait-all";
  if (argc > 2 || (argc == 2 && !wait_all)) {
    std::fprintf(stderr, "usage: mp_in_flight [--wait-all]\n");
    return 2;
  }
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h comm = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (comm == nullptr) return 1;
  psdp_status_t s = PSDP_SUCCESS;
  // The communicators the ops go to: the world alone, or with --wait-all also two splits of it.
  std::vector<psdp_comm_h> comms = {comm};
  if (wait_all) {
    psdp_config_t own = PSDP_CONFIG_INITIALIZER;
    own.split_share = 0;
    const psdp_config_t* configs[] = {nullptr, &own};  // the parent's context, then one of its own
    for (const psdp_config_t* config : configs) {
      psdp_comm_h team = nullptr;
      s = psdp_comm_split(comm, 0, rank, config, &team);
      report.check(s == PSDP_SUCCESS && team != nullptr, "split: " + why(comm, s));
      if (team == nullptr) return report.finish();
      comms.push_back(team);
    }
  }
  // Large vectors shrink with the rank count: 8 ranks share 2 cores on the test machines.
  const size_t shrink = static_cast<size_t>(std::max(1, nranks / 2));

  std::vector<Op> ops(kOps);
  for (int k = 0; k < kOps; ++k) {
    ops[k].kind = kKinds[k % std::size(kKinds)];
    ops[k].count = kCounts[(k * 5) % std::size(kCounts)] / (kCounts[(k * 5) % std::size(kCounts)] > 4096 ? shrink : 1);
    psdp_comm_h on = comms[static_cast<size_t>(k) % comms.size()];
    s = post(ops[k], k, rank, nranks, on);
    report.check(s == PSDP_SUCCESS, "posting " + name(ops[k], k) + ": " + why(on, s));
  }
  // Each rank waits in its own order: completion may not depend on it.
  std::vector<int> order(kOps);
  for (int k = 0; k < kOps; ++k) order[k] = k;
  std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(rank) * 7919u + 1));
  if (wait_all) {
    std::vector<psdp_request_h> all;
    for (int k : order) {
      if (ops[k].request != nullptr) all.push_back(ops[k].request);
    }
    s = psdp_request_wait_all(all.data(), all.size());
    report.check(s == PSDP_SUCCESS, "psdp_request_wait_all: " + why(nullptr, s));
  }
  for (int k : order) {
    if (ops[k].request == nullptr) continue;
    psdp_comm_h on = comms[static_cast<size_t>(k) % comms.size()];
    // After psdp_request_wait_all each request must be complete: test says so without waiting.
    s = wait_all ? psdp_request_test(ops[k].request) : psdp_request_wait(ops[k].request);
    report.check(s == PSDP_SUCCESS, name(ops[k], k) + ": " + why(on, s));
    psdp_request_free(ops[k].request);
    if (s == PSDP_SUCCESS) {
      std::string wrong = check(ops[k], k, rank, nranks);
      report.check(wrong.empty(), name(ops[k], k) + ": " + wrong);
    }
  }
  ops.clear();
  for (size_t c = comms.size(); c-- > 0;) {
    report.check(psdp_comm_finalize(comms[c]) == PSDP_SUCCESS, "finalize: " + why(comms[c], PSDP_SUCCESS));
    psdp_comm_destroy(comms[c]);
  }
  return report.finish();
}
