// The C boundary for a communicator's mapping: the rank layout for a shard group size, and each rank's
// placement, both computed at init from what every rank reported (core/rank_placement.h).
#include <algorithm>

#include "api/guard.h"
#include "api/handle.h"
#include "api/placement_args.h"
#include "api/validate.h"

using psdp::Status;
using psdp::api::checkHandle;
using psdp::api::checkOut;
using psdp::api::guarded;

extern "C" {

PSDP_API psdp_status_t psdp_comm_get_layout(psdp_comm_h comm, int group_size, int* rank_layout) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    PSDP_RETURN_IF_ERROR(checkOut(rank_layout, "rank_layout"));
    PSDP_ASSIGN_OR_RETURN(std::vector<int> layout, comm->impl->placements().layout(group_size));
    std::copy(layout.begin(), layout.end(), rank_layout);
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_comm_get_placement(psdp_comm_h comm, int rank, psdp_rank_placement_t* placement_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    PSDP_RETURN_IF_ERROR(checkOut(placement_p, "placement_p"));
    const psdp::core::Placements& placements = comm->impl->placements();
    if (rank < 0 || rank >= placements.size()) {
      return Status::invalidArgument("rank {} is not in [0, {})", rank, placements.size());
    }
    psdp::api::fillPlacement(placements.placement(rank), placements.ringPosition(rank),
                             placements.descriptor(rank).gpu_bus_id, placement_p);
    return Status::ok();
  });
}

}  // extern "C"
