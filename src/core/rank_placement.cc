#include "core/rank_placement.h"

#include <unistd.h>

#include <climits>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "topo/numa_binding.h"
#include "topo/topology_source.h"

namespace psdp::core {
namespace {

// Topologies by file ("" for the live machine), read once per process: discovery takes tens of
// milliseconds, and every communicator (and every rank thread of a test) needs the same answer. Failures
// are cached too, so a broken file is reported the same way each time.
const Result<topo::Topology>& hostTopology(const std::string& file) {
  static std::mutex mutex;
  static std::map<std::string, Result<topo::Topology>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(file);
  if (it == cache.end()) {
    it = cache.emplace(file, file.empty() ? topo::discoverMachine() : topo::loadTopologyFile(file)).first;
  }
  return it->second;
}

std::string hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

Result<topo::RankDescriptor> describeThisRank(const Config& config, const Logger& log) {
  std::string host_id = config.host_id.empty() ? hostname() : config.host_id;
  const Result<topo::Topology>& topology = hostTopology(config.topo_file);
  if (!topology.isOk()) {
    if (!config.topo_file.empty()) {
      return topology.status().withContext(fmt::format("PSDP_TOPO_FILE '{}'", config.topo_file));
    }
    log->warn("topology discovery failed ({}); this rank is placed as CPU-only on host '{}'",
              topology.status().toString(), host_id);
    topo::RankDescriptor bare;
    bare.host_id = std::move(host_id);
    return bare;
  }
  // The CPU binding says something about the machine in the file only when the file is this machine.
  int cpu_numa = config.topo_file.empty() ? topo::currentNumaNode() : -1;
  return topo::describeRank(topology.value(), std::move(host_id), config.gpu_bus_id, cpu_numa);
}

std::vector<std::byte> packRankPayload(std::span<const std::byte> address, const AgreedSettings& settings,
                                       const topo::RankDescriptor& descriptor) {
  std::vector<std::byte> descriptor_bytes = topo::encodeDescriptor(descriptor);
  auto length = static_cast<uint32_t>(address.size());
  std::vector<std::byte> payload(sizeof(length) + address.size() + kAgreedSettingsBytes + descriptor_bytes.size());
  std::byte* out = payload.data();
  for (size_t i = 0; i < sizeof(length); ++i) *out++ = static_cast<std::byte>((length >> (8 * i)) & 0xff);
  out = std::copy(address.begin(), address.end(), out);
  encodeAgreedSettings(settings, out);
  out += kAgreedSettingsBytes;
  std::copy(descriptor_bytes.begin(), descriptor_bytes.end(), out);
  return payload;
}

std::vector<std::byte> rejectedRankPayload() {
  return std::vector<std::byte>(sizeof(uint32_t), std::byte{0xff});
}

Result<RankPayload> unpackRankPayload(std::span<const std::byte> payload, int rank) {
  uint32_t length = 0;
  if (payload.size() < sizeof(length)) return Status::remote("rank {} sent a truncated rendezvous payload", rank);
  for (size_t i = 0; i < sizeof(length); ++i) length |= static_cast<uint32_t>(payload[i]) << (8 * i);
  if (length == UINT32_MAX && payload.size() == sizeof(length)) {
    return Status::invalidArgument(
        "rank {} could not describe where it runs or what it runs with (PSDP_TOPO_FILE, PSDP_GPU_BUS_ID or "
        "PSDP_TUNING_FILE; its own error says which)",
        rank);
  }
  if (length == 0) return Status::remote("rank {} sent an empty transport address", rank);
  if (payload.size() - sizeof(length) < size_t{length} + kAgreedSettingsBytes) {
    return Status::remote("rank {} sent a rendezvous payload shorter than its address ({} bytes) and settings", rank,
                          length);
  }
  RankPayload out;
  auto address = payload.subspan(sizeof(length), length);
  out.address.assign(address.begin(), address.end());
  out.settings = decodeAgreedSettings(payload.data() + sizeof(length) + length);
  Result<topo::RankDescriptor> descriptor =
      topo::decodeDescriptor(payload.subspan(sizeof(length) + length + kAgreedSettingsBytes));
  if (!descriptor.isOk()) {
    return Status::remote("rank {} sent a malformed placement descriptor: {}", rank, descriptor.status().message());
  }
  out.descriptor = std::move(descriptor).value();
  return out;
}

Result<Placements> Placements::create(std::vector<topo::RankDescriptor> descriptors) {
  Placements placements;
  // Group size 1: the ring order, NICs and NUMA nodes do not depend on it; layouts come from layout().
  PSDP_ASSIGN_OR_RETURN(placements.mapping_, topo::mapRanks(descriptors, 1));
  placements.descriptors_ = std::move(descriptors);
  placements.ring_position_.assign(placements.descriptors_.size(), -1);
  for (size_t i = 0; i < placements.mapping_.ring.size(); ++i) {
    placements.ring_position_[placements.mapping_.ring[i]] = static_cast<int>(i);
  }
  return placements;
}

Result<std::vector<int>> Placements::layout(int group_size) const {
  if (group_size < 1 || size() % group_size != 0) {
    return Status::invalidArgument("group_size {} does not divide the communicator's {} ranks", group_size, size());
  }
  PSDP_ASSIGN_OR_RETURN(topo::RankMapping mapping, topo::mapRanks(descriptors_, group_size));
  return std::move(mapping.layout);
}

Result<Placements> Placements::subset(std::span<const int> members) const {
  std::vector<topo::RankDescriptor> descriptors;
  descriptors.reserve(members.size());
  for (int member : members) descriptors.push_back(descriptors_[member]);
  return create(std::move(descriptors));
}

}  // namespace psdp::core
