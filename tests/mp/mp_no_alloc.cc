// No heap allocation per operation in steady state, from the C API down: this program replaces the global
// operator new and counts every call made by any thread of the process (the caller's, psdp's progress
// threads) while rounds of collectives run: blocking ones, and 32 nonblocking ones of mixed kinds and sizes
// posted back to back, waited for and freed. Warm-up rounds first let every pool reach its working size; the
// measured rounds must then allocate nothing. Results are checked exactly too. Run under psdp-run.
//
// PSDP_TEST_ALLOC_TRACE=1 prints the call stack of every counted allocation (to find the culprit).
#include <execinfo.h>
#include <psdp/psdp.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <new>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
bool g_trace = false;
thread_local bool t_in_trace = false;

void noteAllocation(std::size_t bytes) {
  if (!g_counting.load(std::memory_order_relaxed)) return;
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (!g_trace || t_in_trace) return;
  t_in_trace = true;  // backtrace() itself may allocate
  void* frames[32];
  int n = backtrace(frames, 32);
  std::fprintf(stderr, "allocation of %zu bytes:\n", bytes);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  t_in_trace = false;
}

void* allocate(std::size_t bytes, std::size_t align) {
  noteAllocation(bytes);
  if (bytes == 0) bytes = 1;
  void* p = align <= alignof(std::max_align_t) ? std::malloc(bytes)
                                               : std::aligned_alloc(align, (bytes + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t bytes) {
  return allocate(bytes, alignof(std::max_align_t));
}
void* operator new[](std::size_t bytes) {
  return allocate(bytes, alignof(std::max_align_t));
}
void* operator new(std::size_t bytes, std::align_val_t align) {
  return allocate(bytes, static_cast<std::size_t>(align));
}
void* operator new[](std::size_t bytes, std::align_val_t align) {
  return allocate(bytes, static_cast<std::size_t>(align));
}
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return allocate(bytes, alignof(std::max_align_t));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return allocate(bytes, alignof(std::max_align_t));
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace {

constexpr int kNonblocking = 32;
constexpr int kWarmupRounds = 6;
constexpr int kMeasuredRounds = 4;
// Empty, small (halving/doubling), and large enough for the ring and, on psdp_mem_alloc buffers, direct.
constexpr size_t kCounts[] = {0, 3, 1000, 70000, 300000};
enum Kind {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kBarrier,
  kReduce,
  kGather,
  kAllToAll,
  kAllGatherV,
  kSendRecv,
  kKinds
};

int32_t value(int rank, size_t i, int salt) {
  return static_cast<int32_t>((rank + 1) * 1000 + static_cast<int>(i % 89) + salt);
}

// One operation's buffers, allocated once (before counting) and reused every round.
struct Slot {
  Kind kind;
  size_t count;  // per rank's block for reduce-scatter and all-gather
  int32_t* send = nullptr;
  int32_t* recv = nullptr;
  psdp_request_h request = nullptr;
  psdp_request_h send_request = nullptr;  // send/recv's second half
};

int32_t* allocBuffer(size_t count, bool shared) {
  size_t bytes = (count + 1) * sizeof(int32_t);
  void* p = nullptr;
  if (shared) {
    if (psdp_mem_alloc(&p, bytes) != PSDP_SUCCESS) return nullptr;
  } else {
    p = std::malloc(bytes);
  }
  return static_cast<int32_t*>(p);
}

class Runner {
 public:
  Runner(psdp_comm_h comm, int rank, int nranks, psdp::mp::Report& report)
      : comm_(comm), rank_(rank), nranks_(nranks), report_(report) {
    for (int i = 0; i < kNonblocking; ++i) {
      Slot slot;
      slot.kind = static_cast<Kind>(i % kKinds);
      slot.count = kCounts[(i / kKinds + i) % std::size(kCounts)];
      bool shared = i % 2 == 1;
      size_t total = slot.count * static_cast<size_t>(nranks);
      slot.send = allocBuffer(total, shared);
      slot.recv = allocBuffer(total, shared);
      shared_.push_back(shared);
      slots_.push_back(slot);
    }
    // All-gather-v: even ranks contribute a whole block, odd ranks half of one.
    for (int r = 0; r < nranks; ++r) counts_per_block_.push_back(r % 2 == 0 ? 2 : 1);
  }
  ~Runner() {
    for (size_t i = 0; i < slots_.size(); ++i) {
      for (int32_t* p : {slots_[i].send, slots_[i].recv}) shared_[i] ? (void)psdp_mem_free(p) : std::free(p);
    }
  }

  // One round: every slot once blocking, then all of them nonblocking, waited in reverse order.
  void round(int salt) {
    for (int i = 0; i < kNonblocking; ++i) {
      fill(slots_[i], salt + i);
      check(slots_[i], post(slots_[i], false), salt + i, "blocking");
    }
    std::vector<psdp_status_t>& posted = posted_;
    for (int i = 0; i < kNonblocking; ++i) {
      fill(slots_[i], salt + 100 + i);
      posted[i] = post(slots_[i], true);
    }
    for (int i = kNonblocking - 1; i >= 0; --i) {
      check(slots_[i], finish(slots_[i], posted[i]), salt + 100 + i, "nonblocking");
    }
  }

 private:
  // Waits for and frees the slot's requests; the first error.
  static psdp_status_t finish(Slot& slot, psdp_status_t s) {
    for (psdp_request_h* req : {&slot.request, &slot.send_request}) {
      if (*req == nullptr) continue;
      psdp_status_t waited = psdp_request_wait(*req);
      if (s == PSDP_SUCCESS) s = waited;
      psdp_request_free(*req);
      *req = nullptr;
    }
    return s;
  }

  // Elements of rank r's block of an all-gather-v of a slot whose blocks hold `count` elements.
  size_t countOf(int r, size_t count) const { return count * counts_per_block_[static_cast<size_t>(r)] / 2; }
  size_t offsetOf(int r, size_t count) const {
    size_t offset = 0;
    for (int k = 0; k < r; ++k) offset += countOf(k, count);
    return offset;
  }

  void fill(const Slot& slot, int salt) {
    size_t n = slot.kind == kAllGather || slot.kind == kGather ? slot.count
               : slot.kind == kAllGatherV                      ? countOf(rank_, slot.count)
                                                               : slot.count * static_cast<size_t>(nranks_);
    for (size_t i = 0; i < n; ++i) slot.send[i] = value(rank_, i, salt);
  }

  psdp_status_t post(Slot& slot, bool nonblocking) {
    psdp_request_h* req = nonblocking ? &slot.request : nullptr;
    size_t n = slot.count;
    switch (slot.kind) {
      case kReduce:
        return psdp_reduce(slot.send, slot.recv, n * nranks_, PSDP_INT32, PSDP_SUM, nranks_ - 1, comm_, nullptr, req);
      case kGather: return psdp_gather(slot.send, slot.recv, n, PSDP_INT32, 0, comm_, nullptr, req);
      case kAllToAll: return psdp_all_to_all(slot.send, slot.recv, n, PSDP_INT32, comm_, nullptr, req);
      case kAllGatherV: {
        // Filled here, where the count is known: a fixed array, so the post allocates nothing of the test's.
        for (int r = 0; r < nranks_; ++r) counts_[static_cast<size_t>(r)] = countOf(r, n);
        return psdp_all_gather_v(slot.send, slot.recv, counts_.data(), PSDP_INT32, comm_, nullptr, req);
      }
      case kSendRecv: {
        // Always nonblocking: blocking sends around a ring would wait for each other.
        const int left = (rank_ + nranks_ - 1) % nranks_, right = (rank_ + 1) % nranks_;
        psdp_status_t s = psdp_recv(slot.recv, n * nranks_, PSDP_INT32, left, comm_, nullptr, &slot.request);
        if (s == PSDP_SUCCESS)
          s = psdp_send(slot.send, n * nranks_, PSDP_INT32, right, comm_, nullptr, &slot.send_request);
        return nonblocking ? s : finish(slot, s);
      }
      case kAllReduce:
        return psdp_all_reduce(slot.send, slot.recv, n * nranks_, PSDP_INT32, PSDP_SUM, comm_, nullptr, req);
      case kReduceScatter:
        return psdp_reduce_scatter(slot.send, slot.recv, n, PSDP_INT32, PSDP_SUM, comm_, nullptr, req);
      case kAllGather: return psdp_all_gather(slot.send, slot.recv, n, PSDP_INT32, comm_, nullptr, req);
      case kBroadcast:
        return psdp_broadcast(slot.send, slot.recv, n * nranks_, PSDP_INT32, nranks_ - 1, comm_, nullptr, req);
      case kBarrier:
      case kKinds: return psdp_barrier(comm_, req);
    }
    return PSDP_ERR_INTERNAL;
  }

  // Counting may be on: the checks themselves allocate only when a check fails (the message).
  void check(const Slot& slot, psdp_status_t s, int salt, const char* how) {
    if (s != PSDP_SUCCESS) {
      report_.check(false, std::string(how) + " op: " + why(comm_, s));
      return;
    }
    const size_t n = slot.count, total = n * static_cast<size_t>(nranks_);
    size_t bad = SIZE_MAX;
    for (size_t i = 0; i < total && bad == SIZE_MAX; ++i) {
      int64_t expect = 0;
      switch (slot.kind) {
        case kAllReduce:
          for (int r = 0; r < nranks_; ++r) expect += value(r, i, salt);
          break;
        case kReduceScatter:
          if (i >= n) continue;
          for (int r = 0; r < nranks_; ++r) expect += value(r, n * rank_ + i, salt);
          break;
        case kAllGather: expect = value(static_cast<int>(i / n), i % n, salt); break;
        case kBroadcast: expect = value(nranks_ - 1, i, salt); break;
        case kReduce:
          if (rank_ != nranks_ - 1) continue;
          for (int r = 0; r < nranks_; ++r) expect += value(r, i, salt);
          break;
        case kGather:
          if (rank_ != 0) continue;
          expect = value(static_cast<int>(i / n), i % n, salt);
          break;
        case kAllToAll: expect = value(static_cast<int>(i / n), n * rank_ + i % n, salt); break;
        case kAllGatherV: {
          int r = 0;
          while (r + 1 < nranks_ && offsetOf(r + 1, n) <= i) ++r;
          if (i >= offsetOf(nranks_ - 1, n) + countOf(nranks_ - 1, n)) continue;
          expect = value(r, i - offsetOf(r, n), salt);
          break;
        }
        case kSendRecv: expect = value((rank_ + nranks_ - 1) % nranks_, i, salt); break;
        case kBarrier:
        case kKinds: continue;
      }
      if (slot.recv[i] != static_cast<int32_t>(expect)) bad = i;
    }
    if (bad != SIZE_MAX) {
      report_.check(false, std::string(how) + " kind " + std::to_string(slot.kind) + " count " + std::to_string(n) +
                               ": element " + std::to_string(bad) + " wrong");
    }
  }

  psdp_comm_h comm_;
  int rank_, nranks_;
  psdp::mp::Report& report_;
  std::vector<Slot> slots_;
  std::vector<bool> shared_;
  std::vector<size_t> counts_per_block_;  // halves of a block, per rank
  std::vector<size_t> counts_ = std::vector<size_t>(64);
  std::vector<psdp_status_t> posted_ = std::vector<psdp_status_t>(kNonblocking);
};

}  // namespace

int main() {
  const char* trace = std::getenv("PSDP_TEST_ALLOC_TRACE");
  g_trace = trace != nullptr && std::string(trace) == "1";
  psdp::mp::Report report;
  int rank = 0, nranks = 0;
  psdp_comm_h comm = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (comm == nullptr) return 1;
  {
    Runner runner(comm, rank, nranks, report);
    for (int r = 0; r < kWarmupRounds; ++r) runner.round(r * 1000);
    g_allocations.store(0);
    g_counting.store(true);
    for (int r = 0; r < kMeasuredRounds; ++r) runner.round((kWarmupRounds + r) * 1000);
    g_counting.store(false);
    long counted = g_allocations.load();
    report.check(counted == 0, "operator new was called " + std::to_string(counted) + " times in " +
                                   std::to_string(kMeasuredRounds) + " rounds of " + std::to_string(2 * kNonblocking) +
                                   " operations after warm-up (PSDP_TEST_ALLOC_TRACE=1 shows where)");
  }
  psdp_status_t s = psdp_comm_finalize(comm);
  report.check(s == PSDP_SUCCESS, "finalize: " + why(comm, s));
  psdp_comm_destroy(comm);
  return report.finish();
}
