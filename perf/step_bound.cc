// psdp-step-bound: how much faster than a bulk step a pipelined one can be on this machine, from cache
// locality alone. It runs the memory passes of a sharded step of psdp-perf step's shape with no psdp and no
// messages: RANKS processes whose parameters and gradients share memory, kept in lockstep by spinning on
// shared counters, each with one thread. Per step every rank
//   writes its gradients (backward; the vectorised fill psdp-perf step's backward makes),
//   averages its owned piece over every rank's gradients (the reduce-scatter; read in place, as psdp's direct
//   path reads psdp_mem_alloc buffers),
//   updates its piece with Adam or SGD (psdp-perf step's own kernels), and
//   copies the other ranks' updated pieces into its parameters (the all-gather),
// either once over the whole state (bulk: each rank owns one contiguous piece, as ZeRO-2 lays it out) or a
// chunk at a time (fused: every rank owns an equal slice of every chunk, and each chunk is reduced, updated
// and gathered while its lines may still be in the caches). No system does less than these passes or waits
// less between them, so bulk / fused here bounds what psdp-perf step's pipelined / bulk ratio can reach on
// this machine, for that chunk size. Nothing here overlaps: each rank has one thread, as psdp-perf step's
// framework side does.
//
//   psdp-step-bound [-n RANKS] [--params N] [--chunk-bytes LIST] [--iters N] [--optimizer adam|sgd]
//
// Defaults: 2 ranks, Qwen2.5-0.5B's 494,032,768 float32 parameters (psdp-perf step's default model; the
// parameters and gradients of every rank are shared memory, 8 bytes per parameter per rank, and the moments
// of the owned pieces private), chunks of 256K,1M,4M,16M,64M, 5 timed iterations after one untimed. Each
// iteration runs bulk and every chunk size in an order rotated per iteration. Afterwards every parameter
// must have been updated and every rank's parameters must equal rank 0's, element for element; otherwise it
// exits 1 (as it does when a rank fails or stops arriving for 60 s). Exit 2: bad command line, or the
// memory could not be had. --params takes K, M and G as powers of 1024.
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "framework_kernels.h"
#include "perf_options.h"
#include "target_clones.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kQwenParams = 494032768;  // Qwen2.5-0.5B, tests/data/qwen2.5.json
constexpr size_t kAlignElems = 16;         // owned slices start on 64-byte lines, as psdp's do
constexpr int kBarrierTimeoutS = 60;

struct Options {
  int ranks = 2;
  size_t params = kQwenParams;
  std::vector<size_t> chunk_bytes{size_t{256} << 10, size_t{1} << 20, size_t{4} << 20, size_t{16} << 20,
                                  size_t{64} << 20};
  int iters = 5;
  bool adam = true;
};

[[noreturn]] void usage(const std::string& error) {
  std::fprintf(stderr,
               "psdp-step-bound: %s\n"
               "usage: psdp-step-bound [-n RANKS] [--params N] [--chunk-bytes LIST] [--iters N] "
               "[--optimizer adam|sgd]\n",
               error.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") usage("the step's memory passes, bulk against chunk by chunk");
    if (i + 1 >= argc) usage(arg + " needs a value");
    const char* value = argv[++i];
    if (arg == "-n") {
      if (!psdp::perf::parseInt(value, 1, 64, &o.ranks)) usage("-n: '" + std::string(value) + "' is not 1 to 64");
    } else if (arg == "--params") {
      if (!psdp::perf::parseSize(value, &o.params) || o.params == 0) {
        usage("--params: '" + std::string(value) + "' is not a positive count");
      }
    } else if (arg == "--chunk-bytes") {
      o.chunk_bytes.clear();
      std::string list = value;
      for (size_t at = 0; at <= list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        const std::string item = list.substr(at, comma - at);
        size_t bytes = 0;
        if (!psdp::perf::parseSize(item.c_str(), &bytes) || bytes < kAlignElems * sizeof(float)) {
          usage("--chunk-bytes: '" + item + "' is not a size of at least 64 bytes");
        }
        o.chunk_bytes.push_back(bytes);
        at = comma + 1;
      }
    } else if (arg == "--iters") {
      if (!psdp::perf::parseInt(value, 1, 1000, &o.iters))
        usage("--iters: '" + std::string(value) + "' is not 1 to 1000");
    } else if (arg == "--optimizer") {
      if (std::strcmp(value, "adam") != 0 && std::strcmp(value, "sgd") != 0) {
        usage("--optimizer: '" + std::string(value) + "' is not adam or sgd");
      }
      o.adam = std::strcmp(value, "adam") == 0;
    } else {
      usage("unknown option '" + arg + "'");
    }
  }
  if (o.params < static_cast<size_t>(o.ranks) * kAlignElems) usage("--params: fewer than 16 per rank");
  return o;
}

// The start of rank k's slice of a chunk of n elements: an equal share, on a 64-byte line.
size_t sliceStart(size_t n, int k, int ranks) {
  if (k == ranks) return n;
  return n * static_cast<size_t>(k) / static_cast<size_t>(ranks) / kAlignElems * kAlignElems;
}

// dst = (dst + sum of srcs) / (1 + nsrc), a cache-sized tile at a time: each input read once.
PSDP_PERF_TARGET_CLONES void average(float* __restrict dst, const float* const* srcs, int nsrc, size_t n) {
  const float scale = 1.0f / static_cast<float>(nsrc + 1);
  constexpr size_t kTile = 2048;
  for (size_t t = 0; t < n; t += kTile) {
    const size_t m = std::min(kTile, n - t);
    for (int k = 0; k < nsrc; ++k) {
      const float* __restrict s = srcs[k] + t;
      for (size_t i = 0; i < m; ++i) dst[t + i] += s[i];
    }
    for (size_t i = 0; i < m; ++i) dst[t + i] *= scale;
  }
}

struct alignas(64) Arrival {
  std::atomic<uint64_t> epoch{0};
};

// Every rank's parameters and gradients, and the counters the ranks meet on, in one shared mapping.
class Shared {
 public:
  Shared(int ranks, size_t params) : ranks_(ranks), params_(params) {
    bytes_ = 64 * static_cast<size_t>(ranks) + 2 * static_cast<size_t>(ranks) * params * sizeof(float);
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "psdp-step-bound: cannot map %zu MiB of shared memory (--params %zu, -n %d): %s\n",
                   bytes_ >> 20, params, ranks, std::strerror(errno));
      std::exit(2);
    }
    base_ = static_cast<std::byte*>(p);
    madvise(base_, bytes_, MADV_HUGEPAGE);  // as psdp-perf step's buffers; where THP is off, small pages
    // First touch before anything is timed (it is slow on some VMs); every rank's parameters start at 1.
    std::memset(base_, 0, 64 * static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      psdp::perf::fillFloat(param(r), params, 1.0f);
      psdp::perf::fillFloat(grad(r), params, 0.0f);
    }
  }
  ~Shared() { munmap(base_, bytes_); }
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;

  Arrival& arrival(int r) { return reinterpret_cast<Arrival*>(base_)[r]; }
  float* param(int r) { return reinterpret_cast<float*>(base_ + 64 * static_cast<size_t>(ranks_)) + 2 * r * params_; }
  float* grad(int r) { return param(r) + params_; }

 private:
  int ranks_;
  size_t params_;
  size_t bytes_ = 0;
  std::byte* base_ = nullptr;
};

class Rank {
 public:
  Rank(const Options& o, Shared& shared, int rank) : o_(o), shared_(shared), rank_(rank) {
    // The moments of the owned slices, at most the largest share of any layout timed.
    size_t most = ownedCount(o.params);
    for (size_t bytes : o.chunk_bytes) most = std::max(most, ownedCount(bytes / sizeof(float)));
    m_.assign(most, 0.0f);
    v_.assign(most, 0.0f);
    for (int k = 0; k < o.ranks; ++k) {
      if (k != rank) peers_.push_back(k);
    }
  }

  // One step over chunks of `chunk` elements (the whole state for bulk).
  void step(size_t chunk) {
    float* grads = shared_.grad(rank_);
    float* params = shared_.param(rank_);
    std::vector<const float*> inputs(peers_.size());
    size_t owned_at = 0;
    for (size_t c = 0; c < o_.params; c += chunk) {
      const size_t n = std::min(chunk, o_.params - c);
      psdp::perf::fillFloat(grads + c, n, 1.0f);
      barrier();  // every rank's gradients of the chunk are written
      const size_t begin = c + sliceStart(n, rank_, o_.ranks), end = c + sliceStart(n, rank_ + 1, o_.ranks);
      for (size_t k = 0; k < peers_.size(); ++k) inputs[k] = shared_.grad(peers_[k]) + begin;
      average(grads + begin, inputs.data(), static_cast<int>(inputs.size()), end - begin);
      if (o_.adam) {
        psdp::perf::adamUpdate(params + begin, grads + begin, m_.data() + owned_at, v_.data() + owned_at, end - begin,
                               adam_);
      } else {
        psdp::perf::sgdUpdate(params + begin, grads + begin, end - begin, 1e-4f);
      }
      owned_at += end - begin;
      barrier();  // every rank's slice is updated
      for (int k : peers_) {
        const size_t at = c + sliceStart(n, k, o_.ranks), to = c + sliceStart(n, k + 1, o_.ranks);
        std::memcpy(params + at, shared_.param(k) + at, (to - at) * sizeof(float));
      }
    }
    barrier();  // no rank writes gradients of the next step while another still reads this one's
  }

  // Every rank waits here until all have arrived; a rank that never comes is an error, not a hang.
  void barrier() {
    ++epoch_;
    shared_.arrival(rank_).epoch.store(epoch_, std::memory_order_release);
    for (int k : peers_) {
      const auto start = Clock::now();
      for (uint64_t spins = 1; shared_.arrival(k).epoch.load(std::memory_order_acquire) < epoch_; ++spins) {
        if (spins % 1024 == 0) sched_yield();  // more ranks than cores: let the one we wait for run
        if (spins % 65536 == 0 && Clock::now() - start > std::chrono::seconds(kBarrierTimeoutS)) {
          std::fprintf(stderr, "psdp-step-bound: rank %d: rank %d did not arrive within %d s\n", rank_, k,
                       kBarrierTimeoutS);
          std::exit(1);
        }
      }
    }
  }

 private:
  size_t ownedCount(size_t chunk) const {
    size_t owned = 0;
    for (size_t c = 0; c < o_.params; c += chunk) {
      const size_t n = std::min(chunk, o_.params - c);
      owned += sliceStart(n, rank_ + 1, o_.ranks) - sliceStart(n, rank_, o_.ranks);
    }
    return owned;
  }

  const Options& o_;
  Shared& shared_;
  int rank_;
  std::vector<int> peers_;
  std::vector<float> m_, v_;
  psdp::perf::AdamParams adam_;
  uint64_t epoch_ = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string sizeName(size_t bytes) {
  if (bytes % (size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes % (size_t{1} << 10) == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

// Runs every layout `iters` + 1 times (the first untimed), rotated; returns rank 0's times per layout.
std::vector<std::vector<double>> run(const Options& o, Rank& rank, const std::vector<size_t>& chunks) {
  std::vector<std::vector<double>> times(chunks.size());
  for (int it = 0; it <= o.iters; ++it) {
    for (size_t j = 0; j < chunks.size(); ++j) {
      const size_t layout = (j + static_cast<size_t>(it)) % chunks.size();
      rank.barrier();
      const auto start = Clock::now();
      rank.step(chunks[layout]);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (it > 0) times[layout].push_back(ms);
    }
  }
  return times;
}

// Every parameter of rank 0 was updated (each starts at 1 and every update lowers it), and every rank's
// parameters equal rank 0's: the gathers brought every updated slice.
bool check(const Options& o, Shared& shared) {
  const float* p0 = shared.param(0);
  for (size_t i = 0; i < o.params; ++i) {
    if (!(p0[i] < 1.0f)) {
      std::fprintf(stderr, "psdp-step-bound: rank 0's parameter %zu is %g: never updated\n", i, p0[i]);
      return false;
    }
  }
  for (int r = 1; r < o.ranks; ++r) {
    if (std::memcmp(shared.param(r), p0, o.params * sizeof(float)) != 0) {
      std::fprintf(stderr, "psdp-step-bound: rank %d's parameters differ from rank 0's\n", r);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Shared shared(o.ranks, o.params);
  std::vector<size_t> chunks{o.params};  // bulk first
  for (size_t bytes : o.chunk_bytes) chunks.push_back(std::max(kAlignElems, bytes / sizeof(float)));

  std::fflush(stdout);
  std::vector<pid_t> children;
  const pid_t rank0 = getpid();
  int rank = 0;
  for (int r = 1; r < o.ranks; ++r) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("psdp-step-bound: fork");
      for (pid_t c : children) kill(c, SIGKILL);
      return 2;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive rank 0
      if (getppid() != rank0) return 1;  // it died before the line above
      rank = r;
      children.clear();
      break;
    }
    children.push_back(pid);
  }

  Rank me(o, shared, rank);
  const auto times = run(o, me, chunks);
  if (rank != 0) return 0;

  int failed = 0;
  for (pid_t c : children) {
    int status = 0;
    if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  if (failed > 0) {
    std::fprintf(stderr, "psdp-step-bound: %d of %d ranks failed\n", failed, o.ranks);
    return 1;
  }
  if (!check(o, shared)) return 1;

  std::printf(
      "# psdp-step-bound: %d ranks (one process and thread each, sharing memory, in lockstep), %.1f M "
      "float32 parameters, %s, no psdp\n",
      o.ranks, static_cast<double>(o.params) / 1e6, o.adam ? "Adam" : "SGD");
  std::printf(
      "# per step: backward writes the gradients, each rank averages its slice over every rank's, updates "
      "it and copies the others' slices; once over the state (bulk) or chunk by chunk\n");
  std::printf("# median of %d steps; bulk / chunked above 1: what cache locality can gain at most\n", o.iters);
  std::printf("%-12s %10s %10s %10s %12s\n", "chunk", "median_ms", "min_ms", "max_ms", "bulk/this");
  const double bulk = median(times[0]);
  for (size_t j = 0; j < chunks.size(); ++j) {
    const double med = median(times[j]);
    const auto [lo, hi] = std::minmax_element(times[j].begin(), times[j].end());
    std::printf("%-12s %10.1f %10.1f %10.1f %12.3f\n", j == 0 ? "bulk" : sizeName(o.chunk_bytes[j - 1]).c_str(), med,
                *lo, *hi, bulk / med);
  }
  return 0;
}
