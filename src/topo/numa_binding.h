// Keeping a rank's helper threads and staging memory on its NUMA node: the node of its GPU, or the one its
// CPU binding lies in. Binding is an optimisation, never a reason to fail: where the system refuses it
// (containers without mbind, a CPU set outside the node), the outcome says so and nothing changes.
#pragma once

#include <memory>
#include <string>

namespace psdp::topo {

// The os index of the NUMA node that holds every CPU the calling thread may run on; -1 when they span
// several nodes or hwloc cannot tell.
int currentNumaNode();

// While alive, the calling thread runs on the CPUs of NUMA node `numa_os_index` (intersected with those it
// may use now, so a user's narrower binding is kept) and allocates memory there; threads it starts inherit
// both, which is how the transport's and the engine's progress threads and the staging memory they and this
// thread touch end up on the node. The destructor restores the previous CPU set and memory policy of the
// calling thread. numa_os_index -1 binds nothing.
class ScopedNumaBinding {
 public:
  explicit ScopedNumaBinding(int numa_os_index);
  ~ScopedNumaBinding();
  ScopedNumaBinding(const ScopedNumaBinding&) = delete;
  ScopedNumaBinding& operator=(const ScopedNumaBinding&) = delete;

  bool cpusBound() const { return cpus_bound_; }
  bool memoryBound() const { return memory_bound_; }
  // One sentence for the log: what was bound, or why not.
  const std::string& outcome() const { return outcome_; }

 private:
  struct Saved;  // the previous CPU set and memory policy, in hwloc's types (kept out of this header)
  std::unique_ptr<Saved> saved_;
  bool cpus_bound_ = false;
  bool memory_bound_ = false;
  std::string outcome_;
};

}  // namespace psdp::topo
