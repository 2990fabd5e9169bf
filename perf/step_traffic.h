// What one step of psdp-perf step moves, per rank, computed from the plan: the bytes it sends inside its
// shard group and across its replica group, and the bytes its passes over memory move through DRAM in
// each mode, by this model (perf/README.md, "DRAM bytes"):
//   - per chunk a rank makes these passes, e bytes a parameter or gradient element, w bytes an element of
//     the partial sums (e, or 4 when bfloat16 gradients are reduced in float32), f = 4 bytes of an
//     optimizer-state element, b its group piece, o its owned piece, G the group, R the replicas:
//       backward   writes the chunk's gradients              write n e
//       reduce     its piece of every member's gradients     read G b w, write b w
//       replicas   (R > 1) its piece, across replicas         read b w, write b w (level world: write o w)
//       update     g, p and the optimizer state of its piece read (2 + s) o e, write (1 + s) o e (s: 2 for
//                                                             Adam's m and v, 0 for SGD); with a gradient
//                                                             shard, g and the float32 master weights
//                                                             instead of g and p: read (2 + s) o f, write
//                                                             (1 + s) o f, and the rounded parameters o e
//       r. gather  (level world, R > 1)                       read b e, write b e
//       gather     the other members' pieces into its chunk   read (G - 1) b e, write (G - 1) b e
//     and a chunk that does not run in place (it spans two buffers, or its pieces need padding: psdp.h,
//     psdp_step_begin) is packed before its reduce (read n e, write n w), its reduced piece stored into the
//     gradients (read o w, write o e), its owned parameters packed before its gathers (read o e, write o e)
//     and its parameters unpacked after them (read n e, write n e); a chunk whose partial sums are widened
//     (w != e) is packed and stored as well, though its gathers may run in place, and with a gradient shard
//     the reduced piece is always stored there (read o w, write o f);
//   - every write is a DRAM byte (written back sooner or later);
//   - a read is served from the cache when it reads what a plain store just wrote on the same chunk: the
//     reduce (and packing) reading the gradients backward wrote, the gathers (and packing) reading the
//     parameters the update wrote, by this rank or another rank of the host (the host's last-level cache
//     is shared); and when the chunks in flight fit in that cache: ranks on the host x (reduce window +
//     gather window) x the chunk's larger of gradient and pack bytes <= its size. The collectives' own
//     results are not counted as cached: psdp's direct path streams them past the cache (non-temporal
//     stores) once 8 MiB are in flight, so the replicas stage and the update read them from DRAM. Bulk mode
//     runs each pass over the whole state before the next, which never fits; the optimizer state and the
//     parameters the update reads are always cold.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <vector>

namespace psdp::perf {

struct StepTrafficParams {
  int rank = 0;
  int group = 1;     // G
  int replicas = 1;  // R
  bool world_level = false;
  size_t elem_bytes = 4;        // e: of a parameter or gradient
  size_t wire_bytes = 4;        // w: of a partial sum
  size_t state_bytes = 4;       // f: of an optimizer-state (and gradient-shard) element
  bool gradient_shard = false;  // mixed precision: the update reads the gradient shard and master weights
  int optimizer_buffers = 2;    // s above
  size_t window_chunks = 4;     // reduce window + gather window
  int ranks_on_host = 1;
  size_t cache_bytes = 0;                // the host's last-level cache; 0: unknown, no read counts as cached
  std::vector<size_t> parameter_counts;  // elements of each registered parameter buffer, in order
};

struct StepTraffic {
  double sent_inside = 0;    // bytes this rank sends per step inside its shard group
  double sent_across = 0;    // ... across its replica group
  double dram = 0;           // DRAM bytes per step
  size_t chunks_cached = 0;  // chunks whose reuse the cache serves
  size_t chunks_packed = 0;  // chunks (or, in bulk mode, spaces) that do not run in place
  size_t chunks = 0;
};

// Of a step of `plan` in pipelined mode (chunk by chunk), or in bulk mode (each pass over the whole state;
// a space of several chunks is then packed, as one transfer).
StepTraffic stepTraffic(psdp_plan_h plan, const StepTrafficParams& params, bool pipelined);

// The host's last-level cache in bytes, from sysfs; 0 when it cannot be read.
size_t lastLevelCacheBytes();

}  // namespace psdp::perf
