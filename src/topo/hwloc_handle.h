// RAII owners for hwloc handles and the one place hwloc's error convention (-1 plus errno) becomes a Status.
#pragma once

#include <hwloc.h>

#include <memory>
#include <utility>

#include "base/raii.h"
#include "base/status.h"

namespace psdp::topo {

using HwlocTopology = std::unique_ptr<hwloc_topology, FnDeleter<hwloc_topology_destroy>>;

// A distance matrix from hwloc_distances_get*(), released with the topology that handed it out.
class HwlocDistances {
 public:
  HwlocDistances(hwloc_topology_t topology, hwloc_distances_s* distances)
      : topology_(topology), distances_(distances) {}
  HwlocDistances(HwlocDistances&& other) noexcept
      : topology_(other.topology_), distances_(std::exchange(other.distances_, nullptr)) {}
  HwlocDistances(const HwlocDistances&) = delete;
  HwlocDistances& operator=(const HwlocDistances&) = delete;
  HwlocDistances& operator=(HwlocDistances&&) = delete;
  ~HwlocDistances() {
    if (distances_ != nullptr) hwloc_distances_release(topology_, distances_);
  }

  const hwloc_distances_s& operator*() const { return *distances_; }
  const hwloc_distances_s* operator->() const { return distances_; }

 private:
  hwloc_topology_t topology_;
  hwloc_distances_s* distances_;
};

// Converts hwloc's -1/errno result into a Status naming the call.
Status hwlocCheck(int rc, const char* call);

// A fresh topology with I/O discovery set to `io_filter` (HWLOC_TYPE_FILTER_KEEP_ALL for files: hwloc drops
// every I/O object by default, XML import included).
Result<HwlocTopology> makeHwlocTopology(hwloc_type_filter_e io_filter);

}  // namespace psdp::topo
