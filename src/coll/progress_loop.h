// The state machine every collective algorithm is: advanced as far as completions allow by whoever drives
// it (coll/progress_driver.h), which sleeps on the transport's event counter only when nothing moved.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "base/status.h"
#include "coll/op_context.h"

namespace psdp::coll {

// kAdvanced: something moved, call again at once. kYielded: something moved and more local work remains (a
// slice of a large reduction), but other operations get their turn first, so that one long computation
// does not hold them up. kBlocked: nothing can move until a transfer completes.
enum class Progress { kBlocked, kAdvanced, kYielded, kDone };

// One algorithm's state machine (a ring pass, the barrier), as a posted collective drives it: the caller
// owns the loop, so several can be stepped from one progress thread.
class Phase {
 public:
  virtual ~Phase() = default;
  // Posts what may be posted, consumes what has completed; never blocks.
  virtual Result<Progress> advance() = 0;
  // The peers and operations it is blocked on, for the timeout message.
  virtual std::string waitingFor() const = 0;
};

// Destroys a phase made in PhaseStorage; the storage stays.
struct PhaseDestroyer {
  void operator()(Phase* phase) const { phase->~Phase(); }
};
using PhasePtr = std::unique_ptr<Phase, PhaseDestroyer>;

// Room for one phase, made in place: a task runs one phase at a time, so its task slot holds one, and starting
// a stage allocates nothing. REQUIRES: the phase made before is destroyed first.
class PhaseStorage {
 public:
  static constexpr size_t kBytes = 1024;
  static constexpr size_t kAlign = 64;

  template <typename T, typename... Args>
  T* make(Args&&... args) {
    static_assert(sizeof(T) <= kBytes, "a phase outgrew PhaseStorage::kBytes");
    static_assert(alignof(T) <= kAlign, "a phase needs more alignment than PhaseStorage::kAlign");
    return new (bytes_) T(std::forward<Args>(args)...);
  }

 private:
  alignas(kAlign) std::byte bytes_[kBytes];
};

}  // namespace psdp::coll
