#include "step_report.h"

#include <algorithm>

namespace psdp::perf {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = kMiB * 1024.0;

// "float32", or the mixed precision and its partial sums.
const char* precisionName(const StepOptions& o) {
  if (!o.mixed) return "float32";
  return o.bf16_partials ? "bfloat16 with float32 master weights, bfloat16 partial sums"
                         : "bfloat16 with float32 master weights, float32 partial sums";
}

// A window or grouping as asked: 0 leaves it to the tuning file's engine rule, or to online tuning.
std::string engineSetting(const StepOptions& o, size_t value) {
  if (value != 0) return std::to_string(value);
  return o.online ? "tuned online" : "of the tuning file";
}

}  // namespace

const char* stepModeName(StepMode mode) {
  switch (mode) {
    case kPipelined: return "pipelined";
    case kBulk: return "bulk";
    case kCommOnly: return "comm only";
    case kUpdateOnly: return "update only";
    default: return "?";
  }
}

double overlapAchieved(const StepResults& r, StepMode mode) {
  if (!r.present[mode] || !r.present[kCommOnly] || !r.present[kUpdateOnly]) return 0;
  const double comm = r.median[kCommOnly], update = r.median[kUpdateOnly];
  return (comm + update - r.median[mode]) / std::min(comm, update);
}

void printStepReport(const StepOptions& o, const StepSetup& s, const StepTraffic& pipelined, const StepTraffic& bulk,
                     const StepResults& r, FILE* out) {
  const StepTraffic& t = o.pipelined ? pipelined : bulk;
  const double state = static_cast<double>(s.elements) * (o.mixed ? 2 : 4);
  std::fprintf(out,
               "# psdp-perf step: %s (%zu tensors, %.1f M parameters), %d ranks, G %d, level %s, %s, %s, "
               "%s (%s), %zu chunks (bulk: %s), windows %s, grouping %s, gathers %s, backward %.0f ms\n",
               s.model.c_str(), s.tensors, static_cast<double>(s.elements) / 1e6, s.nranks, s.group,
               o.world_level ? "world" : "group", precisionName(o), o.adam ? "Adam" : "SGD",
               s.buffers == 1 ? "one flat buffer" : "a buffer per tensor",
               o.shared_buffers ? "psdp_mem_alloc" : "private, huge-page advised", s.chunks,
               o.bulk_chunked ? "the same chunks, packed" : "one chunk per space, in place",
               engineSetting(o, o.window).c_str(), engineSetting(o, o.grouping).c_str(),
               o.gather_forward ? "forward" : "backward", o.backward_ms);
  if (!s.model_path.empty()) std::fprintf(out, "# shapes from %s\n", s.model_path.c_str());
  // Optimizer state: Adam's moments, and with mixed precision the master weights; then the gradient shard.
  const double owned_bytes = static_cast<double>(s.owned) * 4;
  std::fprintf(out, "# per rank: parameters %.0f MiB, gradients %.0f MiB, optimizer state %.0f MiB", state / kMiB,
               state / kMiB, owned_bytes * ((o.adam ? 2 : 0) + (o.mixed ? 1 : 0)) / kMiB);
  if (o.mixed) std::fprintf(out, ", gradient shard %.0f MiB", owned_bytes / kMiB);
  std::fputc('\n', out);
  std::fprintf(out, "# bytes sent per rank per step: inside the shard group %.1f MiB, across replicas %.1f MiB\n",
               t.sent_inside / kMiB, t.sent_across / kMiB);
  std::fprintf(out, "%-12s %10s %10s %10s\n", "mode", "median_ms", "min_ms", "max_ms");
  for (int m = 0; m < kStepModes; ++m) {
    if (!r.present[m]) continue;
    std::fprintf(out, "%-12s %10.1f %10.1f %10.1f\n", stepModeName(static_cast<StepMode>(m)), r.median[m] * 1e3,
                 r.min[m] * 1e3, r.max[m] * 1e3);
  }
  const double longer = std::max(r.median[kCommOnly], r.median[kUpdateOnly]);
  for (StepMode m : {kPipelined, kBulk}) {
    if (!r.present[m]) continue;
    std::fprintf(out,
                 "# %s: overlap achieved %.2f (time hidden / the shorter of comm only and update only), "
                 "step / the longer %.2f\n",
                 stepModeName(m), overlapAchieved(r, m), r.median[m] / longer);
  }
  if (o.pipelined && o.bulk) {
    std::fprintf(out,
                 "# DRAM bytes per rank per step (model: perf/README.md): pipelined %.2f GiB, bulk %.2f GiB, "
                 "pipelined / bulk %.3f (%zu of %zu chunks fit the %.0f MiB cache with %d ranks on the host; packed: "
                 "%zu of %zu chunks pipelined, %zu of %zu bulk)\n",
                 pipelined.dram / kGiB, bulk.dram / kGiB, pipelined.dram / bulk.dram, pipelined.chunks_cached,
                 pipelined.chunks, static_cast<double>(s.cache_bytes) / kMiB, s.ranks_on_host, pipelined.chunks_packed,
                 pipelined.chunks, bulk.chunks_packed, bulk.chunks);
  }
  if (r.present[kPipelined] && r.present[kBulk]) {
    std::fprintf(out, "# pipelined / bulk step time: %.3f (pipelined %.2fx faster)\n",
                 r.median[kPipelined] / r.median[kBulk], r.median[kBulk] / r.median[kPipelined]);
  }
}

bool writeStepJson(const StepOptions& o, const StepSetup& s, const StepTraffic& pipelined, const StepTraffic& bulk,
                   const StepResults& r, const std::string& path) {
  const StepTraffic& t = o.pipelined ? pipelined : bulk;
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "psdp-perf step: cannot write %s\n", path.c_str());
    return false;
  }
  std::fprintf(
      f,
      "{\n  \"model\": \"%s\", \"tensors\": %zu, \"parameters\": %zu, \"buffers\": %zu, \"ranks\": %d, "
      "\"group\": %d, \"level\": \"%s\", \"optimizer\": \"%s\", \"chunks\": %zu, \"window\": %zu, \"grouping\": %zu,\n"
      "  \"bulk_plan\": \"%s\", \"shared_buffers\": %s,\n"
      "  \"backward_ms\": %g, \"ranks_on_host\": %d, \"cache_bytes\": %zu,\n"
      "  \"precision\": \"%s\", \"partial_sums\": \"%s\",\n",
      s.model.c_str(), s.tensors, s.elements, s.buffers, s.nranks, s.group, o.world_level ? "world" : "group",
      o.adam ? "adam" : "sgd", s.chunks, o.window, o.grouping, o.bulk_chunked ? "chunked" : "whole",
      o.shared_buffers ? "true" : "false", o.backward_ms, s.ranks_on_host, s.cache_bytes, o.mixed ? "bf16" : "fp32",
      o.mixed && o.bf16_partials ? "bf16" : "float32");
  std::fprintf(f, "  \"sent_inside_bytes\": %.0f, \"sent_across_bytes\": %.0f,\n", t.sent_inside, t.sent_across);
  std::fprintf(f,
               "  \"dram_bytes\": {\"pipelined\": %.0f, \"bulk\": %.0f, \"chunks_cached\": %zu, "
               "\"chunks_packed_pipelined\": %zu, \"chunks_packed_bulk\": %zu},\n",
               pipelined.dram, bulk.dram, pipelined.chunks_cached, pipelined.chunks_packed, bulk.chunks_packed);
  std::fprintf(f, "  \"seconds\": {");
  bool first = true;
  for (int m = 0; m < kStepModes; ++m) {
    if (!r.present[m]) continue;
    std::fprintf(f, "%s\n    \"%s\": {\"median\": %.9f, \"min\": %.9f, \"max\": %.9f}", first ? "" : ",",
                 stepModeName(static_cast<StepMode>(m)), r.median[m], r.min[m], r.max[m]);
    first = false;
  }
  std::fprintf(f, "\n  },\n  \"overlap\": {\"pipelined\": %.4f, \"bulk\": %.4f},\n", overlapAchieved(r, kPipelined),
               overlapAchieved(r, kBulk));
  const bool both = r.present[kPipelined] && r.present[kBulk];
  std::fprintf(f, "  \"pipelined_over_bulk\": %.4f\n}\n", both ? r.median[kPipelined] / r.median[kBulk] : 0.0);
  return std::fclose(f) == 0;
}

}  // namespace psdp::perf
