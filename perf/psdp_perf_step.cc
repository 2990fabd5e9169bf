// psdp-perf-step: the time of a whole sharded step (psdp_step_begin to psdp_step_end) of one float32 state,
// pipelined against bulk mode in the same run, interleaved (ABAB...), with SGD on the owned ranges. The
// framework side is what a training loop does: report every gradient (backward order, a chunk at a time),
// take each reduced chunk, update it, mark it updated. With --backward-ms T, the gradients become ready over
// T ms (the thread sleeps before each report, as it would wait for a GPU's backward): pipelining's gain is
// the reduction that overlaps it. It also prints, from the plan, the bytes each rank sends per step inside
// its shard group and across its replica group at the chosen level.
//   psdp-run -n 2 -- psdp-perf-step [--bytes 1G] [--chunk-bytes 64M] [--window 2] [--group G] [--level group|world]
//                                   [--iters 5] [--warmup 1] [--mode both|pipelined|bulk] [--backward-ms T]
#include <psdp/psdp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  size_t bytes = size_t{1} << 30;
  size_t chunk_bytes = size_t{64} << 20;
  size_t window = 2;
  int group = 0;
  bool world_level = false;
  int iters = 5;
  int warmup = 1;
  std::string mode = "both";
  double backward_ms = 0;
};

size_t parseSize(const char* text) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  switch (end != nullptr ? *end : 0) {
    case 'K': v *= 1024; break;
    case 'M': v *= 1024 * 1024; break;
    case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return static_cast<size_t>(v);
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (v == nullptr) return false;
    if (a == "--bytes")
      o.bytes = parseSize(v);
    else if (a == "--chunk-bytes")
      o.chunk_bytes = parseSize(v);
    else if (a == "--window")
      o.window = parseSize(v);
    else if (a == "--group")
      o.group = std::atoi(v);
    else if (a == "--level")
      o.world_level = std::string(v) == "world";
    else if (a == "--iters")
      o.iters = std::atoi(v);
    else if (a == "--warmup")
      o.warmup = std::atoi(v);
    else if (a == "--mode")
      o.mode = v;
    else if (a == "--backward-ms")
      o.backward_ms = std::atof(v);
    else
      return false;
    ++i;
  }
  return o.iters > 0 && o.bytes >= 4 && (o.mode == "both" || o.mode == "pipelined" || o.mode == "bulk");
}

#define CHECK(call)                                                                                          \
  do {                                                                                                       \
    psdp_status_t s_ = (call);                                                                               \
    if (s_ != PSDP_SUCCESS) {                                                                                \
      std::fprintf(stderr, "%s failed: %s: %s\n", #call, psdp_status_string(s_), psdp_get_last_error(NULL)); \
      std::exit(1);                                                                                          \
    }                                                                                                        \
  } while (0)

struct Bench {
  psdp_comm_h comm = nullptr;
  int rank = 0, nranks = 0;
  std::vector<float> params, grads, unused;
  psdp_state_h state = nullptr;
  psdp_plan_h plan = nullptr;
  size_t nchunks = 0;
  std::vector<std::vector<psdp_owned_range_t>> owned;

  // Takes the reduced chunks there are (waiting up to timeout_s for the first) and updates each.
  size_t updateReduced(psdp_step_h step, double timeout_s) {
    size_t updated = 0;
    while (true) {
      psdp_step_chunk_t chunk = PSDP_STEP_CHUNK_INITIALIZER;
      CHECK(psdp_step_next_chunk(step, updated == 0 ? timeout_s : 0.0, &chunk));
      if (chunk.chunk == PSDP_STEP_NO_CHUNK) return updated;
      for (size_t r = 0; r < chunk.nranges; ++r) {
        float* p = params.data() + chunk.ranges[r].offset;
        const float* g = grads.data() + chunk.ranges[r].offset;
        for (size_t i = 0; i < chunk.ranges[r].count; ++i) p[i] -= 1e-9f * g[i];
      }
      CHECK(psdp_step_chunk_updated(step, chunk.chunk));
      ++updated;
    }
  }

  // One step; returns its seconds. Chunks reduced during backward are updated at once (bulk mode hands out
  // none until every gradient is reduced).
  double step(bool bulk, const Options& o) {
    psdp_step_config_t config = PSDP_STEP_CONFIG_INITIALIZER;
    config.reduce_window = config.gather_window = o.window;
    config.mode = bulk ? PSDP_STEP_BULK : PSDP_STEP_PIPELINED;
    CHECK(psdp_barrier(comm, nullptr));
    const auto start = std::chrono::steady_clock::now();
    psdp_step_h step = nullptr;
    CHECK(psdp_step_begin(state, &config, &step));
    // Backward order, a chunk's worth at a time, as hooks report buckets.
    const size_t count = params.size(), per = std::max<size_t>(1, o.chunk_bytes / sizeof(float));
    const auto pause = std::chrono::duration<double, std::milli>(o.backward_ms * static_cast<double>(per) /
                                                                 static_cast<double>(count));
    size_t done = 0;
    for (size_t end = count; end > 0;) {
      const size_t begin = end > per ? end - per : 0;
      if (o.backward_ms > 0) std::this_thread::sleep_for(pause);
      CHECK(psdp_step_grads_ready(step, 1, begin, end - begin));
      done += updateReduced(step, 0.0);
      end = begin;
    }
    CHECK(psdp_step_backward_done(step));
    while (done < nchunks) done += updateReduced(step, 60.0);
    CHECK(psdp_step_end(step));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Bytes this rank sends per step, as ring and recursive algorithms move them: a reduce-scatter or
// all-gather of n blocks of b bytes sends (n - 1) * b, an all-reduce of b bytes over n ranks 2 (n - 1) b / n.
void printTraffic(const Bench& b, const Options& o, int G) {
  const int R = b.nranks / G;
  double inside = 0, across = 0;
  for (size_t c = 0; c < b.nchunks; ++c) {
    psdp_plan_chunk_t chunk;
    psdp_plan_get_chunk(b.plan, c, &chunk);
    const double group_block =
        static_cast<double>(o.world_level ? chunk.padded_world_piece * R : chunk.padded_group_piece) * 4;
    inside += 2.0 * (G - 1) * group_block;  // reduce-scatter + all-gather in the group
    if (R > 1) {
      across += o.world_level ? 2.0 * (R - 1) * chunk.padded_world_piece * 4  // reduce-scatter + all-gather
                              : 2.0 * (R - 1) * group_block / R;              // all-reduce
    }
  }
  std::printf(
      "# bytes sent per rank per step: inside the shard group %.1f MiB, across replicas %.1f MiB "
      "(G %d, R %d, level %s)\n",
      inside / (1 << 20), across / (1 << 20), G, R, o.world_level ? "world" : "group");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: psdp-perf-step [--bytes 1G] [--chunk-bytes 64M] [--window 2] [--group G] "
                 "[--level group|world] [--iters 5] [--warmup 1] [--mode both|pipelined|bulk]\n");
    return 2;
  }
  Bench b;
  CHECK(psdp_comm_init_from_env(nullptr, &b.comm));
  psdp_comm_rank(b.comm, &b.rank);
  psdp_comm_size(b.comm, &b.nranks);
  const int G = o.group == 0 ? b.nranks : o.group;
  const size_t n = o.bytes / sizeof(float);
  b.params.assign(n, 1.0f);
  b.grads.assign(n, 1.0f);
  psdp_buffer_desc_t descs[3] = {
      {"w", b.params.data(), n, PSDP_FLOAT32, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0},
      {"w.grad", b.grads.data(), n, PSDP_FLOAT32, PSDP_BUFFER_GRADIENT, PSDP_MEMORY_HOST, 0},
      {"sgd", nullptr, 0, PSDP_FLOAT32, PSDP_BUFFER_OPTIMIZER_STATE, PSDP_MEMORY_HOST, 0},
  };
  psdp_plan_config_t plan_config = PSDP_PLAN_CONFIG_INITIALIZER;
  plan_config.group_size = G;
  plan_config.level = o.world_level ? PSDP_SHARD_LEVEL_WORLD : PSDP_SHARD_LEVEL_GROUP;
  plan_config.chunk_bytes = o.chunk_bytes;
  // SGD keeps no state: an optimizer-state buffer of no elements is not registered.
  CHECK(psdp_state_register(b.comm, descs, 2, &plan_config, &b.state));
  CHECK(psdp_state_get_plan(b.state, &b.plan));
  CHECK(psdp_plan_chunk_count(b.plan, &b.nchunks));
  if (b.rank == 0) {
    std::printf(
        "# psdp-perf-step: %d ranks, G %d, level %s, state %.0f MiB float32 (params and grads, private "
        "buffers), %zu chunks of %.0f MiB, windows %zu, backward %.0f ms, SGD on the owned ranges\n",
        b.nranks, G, o.world_level ? "world" : "group", static_cast<double>(o.bytes) / (1 << 20), b.nchunks,
        static_cast<double>(o.chunk_bytes) / (1 << 20), o.window, o.backward_ms);
    printTraffic(b, o, G);
  }
  std::vector<bool> modes;
  if (o.mode != "bulk") modes.push_back(false);
  if (o.mode != "pipelined") modes.push_back(true);
  for (int i = 0; i < o.warmup; ++i) {
    for (bool bulk : modes) b.step(bulk, o);
  }
  std::vector<double> times[2];
  for (int i = 0; i < o.iters; ++i) {
    // ABAB, then BABA: neither mode always runs first.
    for (size_t m = 0; m < modes.size(); ++m) {
      const bool bulk = modes[(m + static_cast<size_t>(i)) % modes.size()];
      times[bulk ? 1 : 0].push_back(b.step(bulk, o));
    }
  }
  if (b.rank == 0) {
    std::printf("%-10s %10s %10s %10s %12s\n", "mode", "median_ms", "min_ms", "max_ms", "state_GB/s");
    for (int m = 0; m < 2; ++m) {
      if (times[m].empty()) continue;
      const double med = median(times[m]);
      std::printf("%-10s %10.1f %10.1f %10.1f %12.2f\n", m == 1 ? "bulk" : "pipelined", med * 1e3,
                  *std::min_element(times[m].begin(), times[m].end()) * 1e3,
                  *std::max_element(times[m].begin(), times[m].end()) * 1e3, static_cast<double>(o.bytes) / med / 1e9);
    }
    if (!times[0].empty() && !times[1].empty()) {
      std::printf("# pipelined / bulk step time: %.3f\n", median(times[0]) / median(times[1]));
    }
  }
  psdp_plan_free(b.plan);
  CHECK(psdp_state_deregister(b.state));
  CHECK(psdp_comm_finalize(b.comm));
  psdp_comm_destroy(b.comm);
  return 0;
}
