// The mapper's answers in the C API's types, shared by the topology queries and the communicator's.
#pragma once

#include <psdp/psdp.h>

#include <string>

#include "topo/mapper.h"

namespace psdp::api {

psdp_path_class_t toPublicPathClass(topo::PathClass path);

// Fills *out; strings longer than the public fields (never for well-formed bus ids and NIC names) are cut
// at a NUL-terminated boundary.
void fillPlacement(const topo::RankPlacement& placement, int ring_position, const std::string& gpu_bus_id,
                   psdp_rank_placement_t* out);

}  // namespace psdp::api
