// Collective providers: the implementations of Collectives psdp can run a team's collectives with, each
// saying which memory kinds it serves and how its tasks progress. A call picks the provider of its memory
// kind: host memory goes to a host provider (PSDP_HOST_COLLECTIVES, "host" by default), CUDA memory to a
// provider that serves it (NCCL's collectives on streams, completed by polling CUDA events, as UCC's NCCL
// layer does); a build without one returns unsupported for such calls.
//
// Providers in this build:
//   host       ring, recursive halving/doubling and direct algorithms over the transport, chosen per call
//              by the algorithm table (coll/algorithm_table.h);
//   host-ring  every operation on the plain ring, whatever the table says: a reference implementation for
//              tests, and a way to tell a problem of the algorithm choice from one of the data path.
#pragma once

#include <psdp/psdp.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "coll/algorithm_table.h"
#include "coll/collectives.h"
#include "transport/transport.h"

namespace psdp::coll {

// How a provider's tasks move on.
enum class ProviderProgress : uint8_t {
  // They wait on the transport: a task that reports kBlocked is advanced again once the transport has an
  // event (a completion), so the driver sleeps in Transport::waitEvents meanwhile.
  kTransportEvents,
  // They complete outside the transport (CUDA events): a task waiting reports kYielded, and the driver polls
  // it between short waits on the transport.
  kPolled,
};

const char* providerProgressName(ProviderProgress progress);  // "transport events", "polled"

struct CollectiveProvider {
  const char* name;
  const char* description;
  uint32_t memory_kinds;  // bit (1 << psdp_memory_kind_t) per kind served
  ProviderProgress progress;
  // The algorithm table its calls follow, given the one the configuration makes (PSDP_ALGORITHMS and the
  // built-in rules): what the communicator hands create() and psdp-info --algorithms prints.
  AlgorithmTable (*algorithms)(const AlgorithmTable& configured);
  // The collectives of one team over `transport`, whose ranks are the team's. Errors as
  // createHostCollectives's.
  Result<std::unique_ptr<Collectives>> (*create)(transport::Transport& transport, const CollParams& params);

  bool serves(psdp_memory_kind_t kind) const {
    return static_cast<uint32_t>(kind) < 32 && (memory_kinds >> static_cast<uint32_t>(kind) & 1) != 0;
  }
};

const char* memoryKindName(psdp_memory_kind_t kind);  // "host", "CUDA"

// Every provider of this build, in order of preference.
std::span<const CollectiveProvider> collectiveProviders();

// The provider for `kind`: the one named `name`, or the first that serves `kind` when `name` is empty.
// Errors: invalid argument (no provider has that name, or it does not serve `kind`: the message lists the
// providers of `kind`); unsupported (no provider of this build serves `kind`).
Result<const CollectiveProvider*> findCollectiveProvider(psdp_memory_kind_t kind, std::string_view name);

// One line per provider: name, memory kinds, progress and description (what psdp-info prints).
std::string formatCollectiveProviders();

}  // namespace psdp::coll
