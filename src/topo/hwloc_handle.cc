#include "topo/hwloc_handle.h"

#include <cerrno>

namespace psdp::topo {

Status hwlocCheck(int rc, const char* call) {
  if (rc == 0) return Status::ok();
  // hwloc does not always set errno (XML parse errors leave it alone); say so rather than print "Success".
  if (errno == 0) return Status::system("{} failed", call);
  return Status::fromErrno(errno, call);
}

Result<HwlocTopology> makeHwlocTopology(hwloc_type_filter_e io_filter) {
  hwloc_topology_t raw = nullptr;
  errno = 0;
  PSDP_RETURN_IF_ERROR(hwlocCheck(hwloc_topology_init(&raw), "hwloc_topology_init"));
  HwlocTopology topology(raw);
  errno = 0;
  PSDP_RETURN_IF_ERROR(
      hwlocCheck(hwloc_topology_set_io_types_filter(raw, io_filter), "hwloc_topology_set_io_types_filter"));
  return topology;
}

}  // namespace psdp::topo
