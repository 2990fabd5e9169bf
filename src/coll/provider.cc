#include "coll/provider.h"

#include <fmt/format.h>

#include <array>

#include "coll/host_collectives.h"

namespace psdp::coll {
namespace {

constexpr uint32_t kHostMemory = 1u << PSDP_MEMORY_HOST;

AlgorithmTable configuredTable(const AlgorithmTable& configured) {
  return configured;
}

// The host algorithms with a table of one rule, the ring for every call: no recursive or direct path, and
// the communicator's fragment size and the default depth whatever PSDP_ALGORITHMS says.
AlgorithmTable ringTable(const AlgorithmTable&) {
  return AlgorithmTable::ringOnly("provider host-ring");
}

Result<std::unique_ptr<Collectives>> createHostRingCollectives(transport::Transport& transport,
                                                               const CollParams& params) {
  CollParams ring = params;
  ring.algorithms = ringTable(params.algorithms);
  return createHostCollectives(transport, ring);
}

constexpr std::array kProviders = {
    CollectiveProvider{"host", "ring, recursive halving/doubling and direct algorithms, chosen by the algorithm table",
                       kHostMemory, ProviderProgress::kTransportEvents, &configuredTable, &createHostCollectives},
    CollectiveProvider{"host-ring", "every operation on the plain ring, whatever the algorithm table says", kHostMemory,
                       ProviderProgress::kTransportEvents, &ringTable, &createHostRingCollectives},
};

std::string providersOf(psdp_memory_kind_t kind) {
  std::string names;
  for (const CollectiveProvider& p : kProviders) {
    if (p.serves(kind)) names += fmt::format("{}{}", names.empty() ? "" : ", ", p.name);
  }
  return names;
}

}  // namespace

const char* providerProgressName(ProviderProgress progress) {
  return progress == ProviderProgress::kPolled ? "polled" : "transport events";
}

const char* memoryKindName(psdp_memory_kind_t kind) {
  switch (kind) {
    case PSDP_MEMORY_HOST: return "host";
    case PSDP_MEMORY_CUDA: return "CUDA";
    default: return "unknown";
  }
}

std::span<const CollectiveProvider> collectiveProviders() {
  return kProviders;
}

Result<const CollectiveProvider*> findCollectiveProvider(psdp_memory_kind_t kind, std::string_view name) {
  const std::string served = providersOf(kind);
  if (served.empty()) {
    return Status::unsupported("no collective provider of this build serves {} memory", memoryKindName(kind));
  }
  for (const CollectiveProvider& p : kProviders) {
    if (name.empty() ? p.serves(kind) : name == p.name) {
      if (p.serves(kind)) return &p;
      return Status::invalidArgument("collective provider '{}' does not serve {} memory (those that do: {})", name,
                                     memoryKindName(kind), served);
    }
  }
  return Status::invalidArgument("no collective provider is named '{}' (those of {} memory: {})", name,
                                 memoryKindName(kind), served);
}

std::string formatCollectiveProviders() {
  std::string text;
  for (const CollectiveProvider& p : kProviders) {
    std::string kinds;
    for (psdp_memory_kind_t kind : {PSDP_MEMORY_HOST, PSDP_MEMORY_CUDA}) {
      if (p.serves(kind)) kinds += fmt::format("{}{}", kinds.empty() ? "" : ",", memoryKindName(kind));
    }
    text += fmt::format("{:<10} memory {:<5} progress {:<17} {}\n", p.name, kinds, providerProgressName(p.progress),
                        p.description);
  }
  return text;
}

}  // namespace psdp::coll
