#include "base/warning_limiter.h"

namespace psdp {

WarningLimiter::WarningLimiter(int burst, double window_s)
    : burst_(burst), window_ns_(static_cast<uint64_t>(window_s * 1e9)) {}

WarningLimiter::Verdict WarningLimiter::offer(const std::string& kind, uint64_t now_ns) {
  auto [it, fresh] = windows_.try_emplace(kind);
  Window& w = it->second;
  if (fresh || now_ns - w.start_ns >= window_ns_) {
    w.start_ns = now_ns;
    w.admitted = 0;
  }
  if (w.admitted >= burst_) {
    ++w.held_back;
    return Verdict{false, 0};
  }
  ++w.admitted;
  Verdict verdict{true, w.held_back};
  w.held_back = 0;
  return verdict;
}

std::vector<std::pair<std::string, uint64_t>> WarningLimiter::pending() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& [kind, w] : windows_) {
    if (w.held_back > 0) out.emplace_back(kind, w.held_back);
  }
  return out;
}

}  // namespace psdp
