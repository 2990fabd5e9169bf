// Where a communicator's ranks run. Every rank describes itself (host, GPU, NUMA node, NICs: topo/
// rank_descriptor.h) and sends the description with its transport address at the rendezvous; from the
// gathered descriptions every rank computes the same mapping (topo/mapper.h), and layouts for any shard
// group size follow without a further exchange.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "base/status.h"
#include "core/agreed_settings.h"
#include "topo/mapper.h"
#include "topo/rank_descriptor.h"

namespace psdp::core {

// This rank's descriptor. Its host's topology comes from config.topo_file, else the live machine (read
// once per process: ranks that are threads of one process share it); the host id from config.host_id, else
// the hostname; the GPU from config.gpu_bus_id; the NUMA node, when there is no GPU, from the calling
// thread's CPU binding (live machine only). Errors: invalid argument when the named topology file cannot be
// read or does not list the GPU. Live discovery failing is not an error: the descriptor then has the host
// id alone and the rank is placed CPU-only (logged).
Result<topo::RankDescriptor> describeThisRank(const Config& config, const Logger& log);

// The rendezvous payload: the transport address, the settings every rank must share, then the descriptor.
std::vector<std::byte> packRankPayload(std::span<const std::byte> address, const AgreedSettings& settings,
                                       const topo::RankDescriptor& descriptor);

// What a rank sends when it could not describe itself (a bad PSDP_TOPO_FILE or PSDP_GPU_BUS_ID): it still
// takes part in the rendezvous, so that the others fail at once instead of at their timeout.
std::vector<std::byte> rejectedRankPayload();

struct RankPayload {
  std::vector<std::byte> address;
  AgreedSettings settings{};
  topo::RankDescriptor descriptor;
};
// Errors: invalid argument naming `rank` when it sent rejectedRankPayload(); remote, naming it, when its
// payload is malformed.
Result<RankPayload> unpackRankPayload(std::span<const std::byte> payload, int rank);

// The descriptors of a communicator's ranks and the mapping computed from them.
class Placements {
 public:
  // Errors: those of topo::mapRanks (mismatch when two ranks name one host but see different machines).
  static Result<Placements> create(std::vector<topo::RankDescriptor> descriptors);

  int size() const { return static_cast<int>(descriptors_.size()); }
  const topo::RankDescriptor& descriptor(int rank) const { return descriptors_[rank]; }
  const topo::RankPlacement& placement(int rank) const { return mapping_.placement[rank]; }
  int ringPosition(int rank) const { return ring_position_[rank]; }
  const topo::RankMapping& mapping() const { return mapping_; }
  // The rank layout for shard groups of `group_size`. Errors: invalid argument (group_size < 1 or not
  // dividing size()).
  Result<std::vector<int>> layout(int group_size) const;
  // The placement of a subset (a split communicator's members, in their new rank order).
  Result<Placements> subset(std::span<const int> members) const;

 private:
  std::vector<topo::RankDescriptor> descriptors_;
  topo::RankMapping mapping_;
  std::vector<int> ring_position_;
};

}  // namespace psdp::core
