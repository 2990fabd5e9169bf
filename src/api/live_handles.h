// The set of live handles of one kind, so that a freed or foreign handle is refused (invalid usage)
// instead of dereferenced. Thread-safe. Instances live forever (handles may be freed from static
// destructors), hence instance().
#pragma once

#include <mutex>
#include <unordered_set>

namespace psdp::api {

template <typename Handle>
class LiveHandles {
 public:
  static LiveHandles& instance() {
    static LiveHandles* live = new LiveHandles();  // never destroyed, see above
    return *live;
  }
  void add(Handle h) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.insert(h);
  }
  bool contains(Handle h) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.count(h) != 0;
  }
  // False when `h` was not live (released already, possibly by another thread just now).
  bool remove(Handle h) {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.erase(h) != 0;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_set<Handle> live_;
};

}  // namespace psdp::api
