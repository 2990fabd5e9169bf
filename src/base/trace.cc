#include "base/trace.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace psdp::trace {
namespace {

struct Event {
  uint64_t begin_ns;
  uint64_t end_ns;
  uint32_t track;
  char name[64];
};

void writeEscaped(FILE* f, const char* text) {
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c == '"' || *c == '\\') std::fputc('\\', f);
    std::fputc(*c, f);
  }
}

class Tracer {
 public:
  ~Tracer() { stop(); }

  void start(const std::string& path, int rank) {
    std::lock_guard lock(mutex_);
    if (path.empty() || started_) return;
    started_ = true;
    path_ = path;
    for (size_t at = path_.find("%r"); at != std::string::npos; at = path_.find("%r", at)) {
      path_.replace(at, 2, std::to_string(rank));
    }
    rank_ = rank;
    events_ = std::make_unique<Event[]>(kCapacity);
    on_.store(true, std::memory_order_release);
  }

  bool on() const { return on_.load(std::memory_order_relaxed); }

  void nameTrack(uint32_t track, std::string_view name) {
    std::lock_guard lock(mutex_);
    names_[track] = std::string(name);
  }

  void slice(uint32_t track, std::string_view name, uint64_t begin_ns, uint64_t end_ns) {
    if (!on()) return;
    size_t at = next_.fetch_add(1, std::memory_order_relaxed);
    if (at >= kCapacity) return;
    Event& e = events_[at];
    e.begin_ns = begin_ns;
    e.end_ns = end_ns;
    e.track = track;
    size_t n = std::min(name.size(), sizeof(e.name) - 1);
    std::memcpy(e.name, name.data(), n);
    e.name[n] = '\0';
  }

  // Writes the slices taken so far; one a thread is recording at this moment may come out cut. The buffer
  // stays until the process exits, so a late recorder never writes into freed memory before then.
  bool stop() {
    std::lock_guard lock(mutex_);
    if (!on_.exchange(false)) return true;
    size_t count = std::min(next_.load(), kCapacity);
    FILE* f = std::fopen(path_.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "psdp: cannot write the trace to %s\n", path_.c_str());
      return false;
    }
    std::fprintf(f, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
    std::fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": \"rank %d\"}}",
                 rank_, rank_);
    // Each track's slices by start, each in the first lane free by then; a thread id per (track, lane) used,
    // numbered in track order from 0.
    std::vector<size_t> order(count);
    for (size_t i = 0; i < count; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::make_pair(events_[a].track, events_[a].begin_ns) <
             std::make_pair(events_[b].track, events_[b].begin_ns);
    });
    std::vector<uint32_t> tid_of(count);
    uint32_t next_tid = 0;
    for (size_t i = 0; i < count;) {
      const uint32_t track = events_[order[i]].track;
      std::vector<std::pair<uint64_t, uint32_t>> lanes;  // (end of its last slice, tid)
      for (; i < count && events_[order[i]].track == track; ++i) {
        const Event& e = events_[order[i]];
        size_t lane = 0;
        while (lane < lanes.size() && lanes[lane].first > e.begin_ns) ++lane;
        if (lane == lanes.size()) {
          lanes.emplace_back(0, next_tid++);
          auto name = names_.find(track);
          std::string label = name != names_.end() ? name->second : "team " + std::to_string(track);
          if (lane > 0) label += " (" + std::to_string(lane + 1) + ")";
          std::fprintf(
              f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %u, \"args\": {\"name\": \"",
              rank_, lanes.back().second);
          writeEscaped(f, label.c_str());
          std::fprintf(f, "\"}}");
          std::fprintf(f,
                       ",\n{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": %d, \"tid\": %u, "
                       "\"args\": {\"sort_index\": %u}}",
                       rank_, lanes.back().second, lanes.back().second);
        }
        lanes[lane].first = e.end_ns;
        tid_of[order[i]] = lanes[lane].second;
      }
    }
    for (size_t i = 0; i < count; ++i) {
      const Event& e = events_[i];
      std::fprintf(f, ",\n{\"name\": \"");
      writeEscaped(f, e.name);
      std::fprintf(f, "\", \"ph\": \"X\", \"pid\": %d, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f}", rank_, tid_of[i],
                   static_cast<double>(e.begin_ns) / 1e3, static_cast<double>(e.end_ns - e.begin_ns) / 1e3);
    }
    std::fprintf(f, "\n], \"otherData\": {\"dropped_events\": %zu}}\n", next_.load() - count);
    return std::fclose(f) == 0;
  }

 private:
  std::mutex mutex_;
  bool started_ = false;
  std::atomic<bool> on_{false};
  std::string path_;
  int rank_ = 0;
  std::unique_ptr<Event[]> events_;
  std::map<uint32_t, std::string> names_;
  std::atomic<size_t> next_{0};
};

Tracer& tracer() {
  static Tracer instance;
  return instance;
}

}  // namespace

void start(const std::string& path, int rank) {
  tracer().start(path, rank);
}
bool on() {
  return tracer().on();
}
uint64_t nowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
void slice(uint32_t track, std::string_view name, uint64_t begin_ns, uint64_t end_ns) {
  tracer().slice(track, name, begin_ns, end_ns);
}
void nameTrack(uint32_t track, std::string_view name) {
  tracer().nameTrack(track, name);
}
bool stop() {
  return tracer().stop();
}

}  // namespace psdp::trace
