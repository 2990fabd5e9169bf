// Waiting for the other ranks outside psdp, for fault tests whose communicators are failing on purpose: each
// rank marks a stage with a file in a directory all ranks share, and polls for the others' marks.
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace psdp::mp {

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Marks this rank as past `stage` in `dir` and waits (polling the directory, 30 s at most) until `ranks`
// ranks are. Outside psdp on purpose: it must work while psdp is failing.
inline bool reachStage(const std::filesystem::path& dir, const std::string& stage, int rank, int ranks) {
  std::ofstream(dir / (stage + "." + std::to_string(rank))).put('\n');
  Clock::time_point start = Clock::now();
  while (secondsSince(start) < 30.0) {
    int reached = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      reached += entry.path().filename().string().starts_with(stage + ".") ? 1 : 0;
    }
    if (reached >= ranks) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace psdp::mp
