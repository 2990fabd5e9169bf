// The host provider's collectives (coll/provider.h): ring, recursive halving/doubling and direct algorithms
// over the transport's point-to-point messages and peer memory, chosen per call by the algorithm table.
#pragma once

#include <memory>

#include "base/status.h"
#include "coll/collectives.h"
#include "transport/transport.h"

namespace psdp::coll {

// Errors: invalid argument (rank outside [0, nranks), fragment_bytes below kMinFragmentBytes, a transport of
// another size), system (the staging memory, sized for the algorithm table's largest fragment and depth,
// cannot be allocated).
Result<std::unique_ptr<Collectives>> createHostCollectives(transport::Transport& transport, const CollParams& params);

}  // namespace psdp::coll
