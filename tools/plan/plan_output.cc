#include "plan_output.h"

#include <cstdio>
#include <string>

namespace psdp::tools {
namespace {

size_t dtypeBytes(psdp_dtype_t dtype) {
  switch (dtype) {
    case PSDP_INT8:
    case PSDP_UINT8: return 1;
    case PSDP_FLOAT16:
    case PSDP_BFLOAT16: return 2;
    case PSDP_FLOAT64:
    case PSDP_INT64:
    case PSDP_UINT64: return 8;
    default: return 4;
  }
}

std::string humanBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", bytes, kUnits[u]);
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string padded(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

void printPlanText(const PlanReport& report, const PlanCommand& cmd, std::ostream& out) {
  const PlanOptions& o = cmd.plan;
  const int g = o.group_size == 0 ? o.world_size : o.group_size;
  const size_t pb = dtypeBytes(o.param_dtype);
  out << "model " << (report.model.empty() ? cmd.model_path : report.model) << ": " << report.tensors << " tensors, "
      << report.parameters << " parameters\n"
      << "W=" << o.world_size << " G=" << g << " R=" << o.world_size / g << ", optimizer state " << o.state_bytes
      << " B/element, psdp plan hash " << std::hex << report.plan_hash << std::dec << "\n\n";
  out << "scheme  level  shards  collectives  params/rank max  state/rank max  state/rank mean  max/mean  padding\n";
  for (const SchemeReport& s : report.schemes) {
    const double pad = report.parameters ? 100.0 * s.padding / report.parameters : 0;
    out << padded(s.scheme, 8) << padded(s.level, 7) << padded(std::to_string(s.shards), 8)
        << padded(std::to_string(s.chunks), 13) << padded(humanBytes(double(s.maxOwned()) * pb), 17)
        << padded(humanBytes(double(s.maxOwned()) * o.state_bytes), 16)
        << padded(humanBytes(s.meanOwned() * o.state_bytes), 17) << padded(fixed(s.imbalance(), 4), 10) << fixed(pad, 4)
        << "%\n";
  }
  if (!cmd.per_rank) return;
  out << "\nstate bytes per rank\nrank";
  for (const SchemeReport& s : report.schemes) out << "  " << s.scheme << "/" << s.level;
  out << "\n";
  for (int r = 0; r < o.world_size; ++r) {
    out << r;
    for (const SchemeReport& s : report.schemes) out << "  " << s.owned[r] * o.state_bytes;
    out << "\n";
  }
}

void printPlanJson(const PlanReport& report, const PlanCommand& cmd, std::ostream& out) {
  const PlanOptions& o = cmd.plan;
  const size_t pb = dtypeBytes(o.param_dtype);
  out << "{\"model\": \"" << report.model << "\", \"tensors\": " << report.tensors
      << ", \"parameters\": " << report.parameters << ", \"world_size\": " << o.world_size
      << ", \"group_size\": " << (o.group_size == 0 ? o.world_size : o.group_size)
      << ", \"state_bytes_per_element\": " << o.state_bytes << ", \"plan_hash\": \"" << std::hex << report.plan_hash
      << std::dec << "\", \"schemes\": [";
  for (size_t i = 0; i < report.schemes.size(); ++i) {
    const SchemeReport& s = report.schemes[i];
    out << (i ? ", " : "") << "\n  {\"scheme\": \"" << s.scheme << "\", \"level\": \"" << s.level
        << "\", \"shards\": " << s.shards << ", \"collectives\": " << s.chunks
        << ", \"max_param_bytes\": " << s.maxOwned() * pb << ", \"max_state_bytes\": " << s.maxOwned() * o.state_bytes
        << ", \"mean_state_bytes\": " << fixed(s.meanOwned() * o.state_bytes, 1)
        << ", \"imbalance\": " << fixed(s.imbalance(), 6) << ", \"padding_elements\": " << s.padding
        << ", \"state_bytes_per_rank\": [";
    for (size_t r = 0; r < s.owned.size(); ++r) out << (r ? ", " : "") << s.owned[r] * o.state_bytes;
    out << "], \"param_bytes_per_rank\": [";
    for (size_t r = 0; r < s.owned.size(); ++r) out << (r ? ", " : "") << s.owned[r] * pb;
    out << "]}";
  }
  out << "\n]}\n";
}

}  // namespace psdp::tools
