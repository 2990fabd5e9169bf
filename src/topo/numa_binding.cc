#include "topo/numa_binding.h"

#include <cerrno>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "topo/hwloc_handle.h"

namespace psdp::topo {
namespace {

// The live machine without I/O objects (a few milliseconds), loaded once per process: bindings only need
// CPUs and NUMA nodes. Null when hwloc fails.
hwloc_topology_t machine() {
  static HwlocTopology topology;
  static std::once_flag once;
  std::call_once(once, [] {
    auto made = makeHwlocTopology(HWLOC_TYPE_FILTER_KEEP_NONE);
    if (made.isOk() && hwloc_topology_load(made.value().get()) == 0) topology = std::move(made).value();
  });
  return topology.get();
}

using Bitmap = std::unique_ptr<hwloc_bitmap_s, FnDeleter<hwloc_bitmap_free>>;

}  // namespace

struct ScopedNumaBinding::Saved {
  Bitmap cpus{hwloc_bitmap_alloc()};
  Bitmap nodes{hwloc_bitmap_alloc()};
  hwloc_membind_policy_t policy = HWLOC_MEMBIND_DEFAULT;
};

int currentNumaNode() {
  hwloc_topology_t t = machine();
  if (t == nullptr) return -1;
  Bitmap cpus(hwloc_bitmap_alloc());
  Bitmap nodes(hwloc_bitmap_alloc());
  if (!cpus || !nodes || hwloc_get_cpubind(t, cpus.get(), HWLOC_CPUBIND_THREAD) != 0) return -1;
  hwloc_cpuset_to_nodeset(t, cpus.get(), nodes.get());
  return hwloc_bitmap_weight(nodes.get()) == 1 ? hwloc_bitmap_first(nodes.get()) : -1;
}

ScopedNumaBinding::ScopedNumaBinding(int numa_os_index) {
  if (numa_os_index < 0) {
    outcome_ = "no NUMA node to bind to";
    return;
  }
  hwloc_topology_t t = machine();
  hwloc_obj_t node = t ? hwloc_get_numanode_obj_by_os_index(t, static_cast<unsigned>(numa_os_index)) : nullptr;
  if (node == nullptr) {
    outcome_ = fmt::format("NUMA node {} is not on this machine; nothing bound", numa_os_index);
    return;
  }
  saved_ = std::make_unique<Saved>();
  Bitmap target(hwloc_bitmap_alloc());
  if (!saved_->cpus || !saved_->nodes || !target) {
    outcome_ = "out of memory; nothing bound";
    return;
  }
  std::string cpus_outcome;
  if (hwloc_get_cpubind(t, saved_->cpus.get(), HWLOC_CPUBIND_THREAD) != 0) {
    cpus_outcome = fmt::format("CPUs not bound (get_cpubind: {})", std::strerror(errno));
  } else {
    hwloc_bitmap_and(target.get(), saved_->cpus.get(), node->cpuset);
    if (hwloc_bitmap_iszero(target.get())) {
      cpus_outcome = "CPUs not bound (the thread may not run on that node)";
    } else if (hwloc_set_cpubind(t, target.get(), HWLOC_CPUBIND_THREAD) != 0) {
      cpus_outcome = fmt::format("CPUs not bound (set_cpubind: {})", std::strerror(errno));
    } else {
      cpus_bound_ = true;
      cpus_outcome = fmt::format("CPUs bound to {} of its {}", hwloc_bitmap_weight(target.get()),
                                 hwloc_bitmap_weight(node->cpuset));
    }
  }
  std::string memory_outcome;
  if (hwloc_get_membind(t, saved_->nodes.get(), &saved_->policy, HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) != 0) {
    memory_outcome = fmt::format("memory not bound (get_membind: {})", std::strerror(errno));
  } else if (hwloc_set_membind(t, node->nodeset, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) !=
             0) {
    memory_outcome = fmt::format("memory not bound (set_membind: {})", std::strerror(errno));
  } else {
    memory_bound_ = true;
    memory_outcome = "memory bound";
  }
  outcome_ = fmt::format("NUMA node {}: {}, {}", numa_os_index, cpus_outcome, memory_outcome);
}

ScopedNumaBinding::~ScopedNumaBinding() {
  hwloc_topology_t t = machine();
  if (cpus_bound_) (void)hwloc_set_cpubind(t, saved_->cpus.get(), HWLOC_CPUBIND_THREAD);
  if (memory_bound_) {
    (void)hwloc_set_membind(t, saved_->nodes.get(), saved_->policy, HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET);
  }
}

}  // namespace psdp::topo
