// Rate limiting of warnings that outsiders can provoke (a hostile or confused peer of the bootstrap root),
// per kind, so that a flood of one kind can neither flood the log nor silence the warnings of another:
// at most `burst` warnings of a kind are admitted per window of `window_s` seconds; the rest are counted,
// and the next admitted warning of that kind (or pending(), when the owner ends) says how many there were.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace psdp {

class WarningLimiter {
 public:
  WarningLimiter(int burst, double window_s);

  struct Verdict {
    bool admit = false;      // log it as a warning (else at a lower level)
    uint64_t held_back = 0;  // admit: warnings of this kind not admitted since the last one that was
  };
  // A warning of `kind` at `now_ns` (any monotonic clock, never decreasing).
  Verdict offer(const std::string& kind, uint64_t now_ns);

  // Kinds with warnings held back since their last admitted one, and how many: for a summary at the end.
  std::vector<std::pair<std::string, uint64_t>> pending() const;

 private:
  struct Window {
    uint64_t start_ns = 0;
    int admitted = 0;
    uint64_t held_back = 0;
  };
  const int burst_;
  const uint64_t window_ns_;
  std::map<std::string, Window> windows_;
};

}  // namespace psdp
