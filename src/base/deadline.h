// A point in time by which a blocking call must return: every wait in psdp takes one, so that
// PSDP_TIMEOUT bounds init, collectives and shutdown alike.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>

namespace psdp {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // `seconds` from now; infinite or huge values saturate to never().
  static Deadline after(double seconds) {
    if (!std::isfinite(seconds) || seconds > 1e9) return never();
    return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
  }
  static Deadline never() { return Deadline(Clock::time_point::max()); }

  bool expired() const { return Clock::now() >= at_; }
  bool isNever() const { return at_ == Clock::time_point::max(); }
  // Seconds left, 0 once expired.
  double remainingSeconds() const {
    if (isNever()) return 1e18;
    return std::max(0.0, std::chrono::duration<double>(at_ - Clock::now()).count());
  }
  // Milliseconds left for poll()/epoll_wait(), rounded up so a wait never ends just before the deadline;
  // capped at `cap_ms` (poll loops re-check other conditions at least that often).
  int remainingMs(int cap_ms = 1000) const {
    double ms = std::ceil(remainingSeconds() * 1000.0);
    return static_cast<int>(std::min<double>(ms, cap_ms));
  }
  // The earlier of the two.
  Deadline min(const Deadline& other) const { return at_ <= other.at_ ? *this : other; }
  Clock::time_point timePoint() const { return at_; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

}  // namespace psdp
