#include "step_traffic.h"

#include <algorithm>
#include <fstream>
#include <string>

namespace psdp::perf {

namespace {

// Per chunk: how many parameter buffers it touches.
std::vector<int> buffersPerChunk(psdp_plan_h plan, const StepTrafficParams& p, size_t chunks) {
  std::vector<int> touches(chunks, 0);
  for (size_t b = 0; b < p.parameter_counts.size(); ++b) {
    size_t first = 0, last = 0;
    psdp_plan_find_chunk(plan, static_cast<int>(b), 0, &first, nullptr);
    psdp_plan_find_chunk(plan, static_cast<int>(b), p.parameter_counts[b] - 1, &last, nullptr);
    for (size_t c = first; c <= last && c < chunks; ++c) ++touches[c];
  }
  return touches;
}

}  // namespace

StepTraffic stepTraffic(psdp_plan_h plan, const StepTrafficParams& p, bool pipelined) {
  StepTraffic t;
  psdp_plan_chunk_count(plan, &t.chunks);
  const std::vector<int> touches = buffersPerChunk(plan, p, t.chunks);
  std::vector<size_t> chunks_in_space;
  for (size_t c = 0; c < t.chunks; ++c) {
    psdp_plan_chunk_t chunk;
    psdp_plan_get_chunk(plan, c, &chunk);
    if (chunk.space >= chunks_in_space.size()) chunks_in_space.resize(chunk.space + 1, 0);
    ++chunks_in_space[chunk.space];
  }
  const double e = static_cast<double>(p.elem_bytes), w = static_cast<double>(p.wire_bytes);
  const double f = static_cast<double>(p.state_bytes);
  const double G = p.group, R = p.replicas, s = p.optimizer_buffers;
  for (size_t c = 0; c < t.chunks; ++c) {
    psdp_plan_chunk_t chunk;
    psdp_plan_get_chunk(plan, c, &chunk);
    size_t owned = 0;
    psdp_plan_owned_count(plan, p.rank, c, &owned);
    const double n = static_cast<double>(chunk.count);
    // The group piece a member reduces and gathers: at level world, R world pieces end to end.
    const double b = static_cast<double>(p.world_level ? chunk.padded_world_piece * static_cast<size_t>(p.replicas)
                                                       : chunk.padded_group_piece);
    const double o = static_cast<double>(owned);
    const double world_piece = static_cast<double>(chunk.padded_world_piece);

    // Ring and recursive algorithms send (n - 1) blocks of a reduce-scatter or all-gather over n ranks, an
    // all-reduce twice that over n; reductions in the partial sums' dtype, gathers in the parameters'.
    t.sent_inside += (G - 1) * b * (w + e);
    if (R > 1) {
      t.sent_across += p.world_level ? (R - 1) * world_piece * (w + e) : 2 * (R - 1) * b * w / R;
    }

    const bool replicas = R > 1, replica_gather = R > 1 && p.world_level;
    // The update: with a gradient shard, of the float32 master weights (the parameter range is only
    // written, rounded); else of the parameters in place.
    const double update_writes = p.gradient_shard ? (1 + s) * o * f + o * e : (1 + s) * o * e;
    const double update_reads = p.gradient_shard ? (2 + s) * o * f : (2 + s) * o * e;
    double writes = n * e                                              // backward
                    + b * w                                            // reduce
                    + (replicas ? (p.world_level ? o : b) * w : 0)     // replicas
                    + update_writes                                    // update
                    + (replica_gather ? b * e : 0) + (G - 1) * b * e;  // gathers
    // Reads: of what a plain store just wrote (hot, when the chunks in flight fit the cache), and the rest.
    double hot = G * b * w + (replica_gather ? b * e : 0) + (G - 1) * b * e;
    double cold = (replicas ? b * w : 0) + update_reads;
    const double pieces = p.world_level ? world_piece * static_cast<double>(p.group * p.replicas) : b * G;
    const bool in_place = touches[c] == 1 && pieces == n && (pipelined || chunks_in_space[chunk.space] == 1);
    // Widened partial sums never reduce in place; the gather still can.
    const bool reduce_packed = !in_place || w != e;
    if (reduce_packed) {
      writes += n * w;  // pack
      hot += n * e;     // pack reads the gradients
    }
    if (reduce_packed || p.gradient_shard) {
      writes += o * (p.gradient_shard ? f : e);  // the reduced piece stored
      cold += o * w;
    }
    if (!in_place) {
      writes += o * e + n * e;  // pack owned parameters, unpack
      hot += o * e;             // pack owned reads the parameters
      cold += n * e;            // unpack reads the gathered chunk
    }
    if (reduce_packed || !in_place) ++t.chunks_packed;
    const double in_flight =
        static_cast<double>(p.ranks_on_host) * static_cast<double>(p.window_chunks) * n * std::max(e, w);
    const bool fits = pipelined && p.cache_bytes > 0 && in_flight <= static_cast<double>(p.cache_bytes);
    t.dram += writes + cold + (fits ? 0 : hot);
    if (fits) ++t.chunks_cached;
  }
  return t;
}

size_t lastLevelCacheBytes() {
  size_t best = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream level("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/level");
    std::ifstream size("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    int l = 0;
    std::string text;
    if (!(level >> l) || !(size >> text) || text.empty()) continue;
    size_t bytes = std::stoull(text);
    if (text.back() == 'K') bytes <<= 10;
    if (text.back() == 'M') bytes <<= 20;
    if (l >= 2) best = std::max(best, bytes);  // the largest of L2 and L3
  }
  return best;
}

}  // namespace psdp::perf
