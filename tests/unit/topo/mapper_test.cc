// The mapper over simulated clusters of the real machines (1, 2 and 4 hosts of each shipped file, one rank per
// GPU), the concrete choices it must make on known machines, and its errors and notes.
#include "topo/mapper.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "unit/topo/topology_fixtures.h"

namespace psdp::topo {
namespace {

using testing::gpuNamed;
using testing::loadShipped;
using testing::nicNamed;

// Every topology file shipped, except the NCCL graph file (not a topology).
const char* const kMachines[] = {
    "hwloc/hwloc-32em64t-2n8c2t-pci-wholeio.xml",
    "hwloc/hwloc-nvidiaDGX2.xml",
    "hwloc/hwloc-power8gpudistances.xml",
    "hwloc/mpibind-coral-lassen.xml",
    "hwloc/mpibind-cts1-pascal.xml",
    "hwloc/mpibind-eas-tioga.xml",
    "nccl/aws-g5.48xl-topo.xml",
    "nccl/aws-p4d-24xl-topo.xml",
    "nccl/azure-ncv4-topo.xml",
    "nccl/azure-ndv2-topo.xml",
    "nccl/azure-ndv4-topo.xml",
};
constexpr int kCpuOnlyRanksPerHost = 4;

int ranksPerHost(const Topology& t) {
  return t.gpus.empty() ? kCpuOnlyRanksPerHost : static_cast<int>(t.gpus.size());
}

enum class RankOrder {
  kGpuOrder,     // rank h * P + i on host h drives GPU i
  kScrambled,    // the same hosts, but local rank i drives GPU (5i + 3) mod P: rank order says nothing of locality
  kInterleaved,  // rank r on host r % hosts, driving GPU r / hosts
};

// `hosts` copies of one machine named host0, host1, ...; one rank per GPU (CPU-only: 4 unbound ranks).
std::vector<RankDescriptor> simulate(const Topology& t, int hosts, RankOrder order = RankOrder::kGpuOrder) {
  const int per_host = ranksPerHost(t);
  std::vector<RankDescriptor> ranks(per_host * hosts);
  for (int h = 0; h < hosts; ++h) {
    for (int local = 0; local < per_host; ++local) {
      // 5 is coprime with every GPU count shipped (powers of two), so this permutes.
      int gpu = order == RankOrder::kScrambled ? (5 * local + 3) % per_host : local;
      std::string bus_id = t.gpus.empty() ? "" : t.pci[t.gpus[gpu].pci].bus_id;
      Result<RankDescriptor> d = describeRank(t, "host" + std::to_string(h), bus_id, -1);
      EXPECT_TRUE(d.isOk()) << d.status().toString();
      int rank = order == RankOrder::kInterleaved ? local * hosts + h : h * per_host + local;
      if (d.isOk()) ranks[rank] = std::move(d).value();
    }
  }
  return ranks;
}

// The rank on host `host` that drives the GPU named `gpu`.
int rankOf(const Topology& t, std::span<const RankDescriptor> ranks, const std::string& host, std::string_view gpu) {
  const std::string& bus_id = t.pci[t.gpus[gpuNamed(t, gpu)].pci].bus_id;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].host_id == host && ranks[r].gpu_bus_id == bus_id) return static_cast<int>(r);
  }
  ADD_FAILURE() << "no rank drives " << gpu << " on " << host;
  return 0;
}

RankMapping mustMap(std::span<const RankDescriptor> ranks, int group_size) {
  Result<RankMapping> m = mapRanks(ranks, group_size);
  EXPECT_TRUE(m.isOk()) << m.status().toString();
  return m.isOk() ? std::move(m).value() : RankMapping{};
}

void expectPermutation(std::vector<int> v, int world) {
  std::sort(v.begin(), v.end());
  ASSERT_EQ(static_cast<int>(v.size()), world);
  for (int i = 0; i < world; ++i) ASSERT_EQ(v[i], i);
}

// Shard group k (members layout[k*G .. k*G+G)), and replica group g (member g of every shard group).
std::vector<int> shardGroup(const RankMapping& m, int k) {
  return std::vector<int>(m.layout.begin() + k * m.group_size, m.layout.begin() + (k + 1) * m.group_size);
}
std::vector<int> replicaGroup(const RankMapping& m, int g) {
  std::vector<int> members;
  for (size_t at = g; at < m.layout.size(); at += m.group_size) members.push_back(m.layout[at]);
  return members;
}
std::set<int> hostsOf(const RankMapping& m, const std::vector<int>& members) {
  std::set<int> hosts;
  for (int r : members) hosts.insert(m.placement[r].host);
  return hosts;
}
int groupCount(const RankMapping& m) {
  return static_cast<int>(m.layout.size()) / m.group_size;
}

bool samePlacement(const RankPlacement& a, const RankPlacement& b) {
  return a.host == b.host && a.local_index == b.local_index && a.numa_node == b.numa_node && a.nic == b.nic &&
         a.nic_path == b.nic_path;
}

// What holds for any machine and host count.
void expectConsistent(std::span<const RankDescriptor> ranks, const RankMapping& m) {
  const int world = static_cast<int>(ranks.size());
  expectPermutation(m.ring, world);
  expectPermutation(m.layout, world);
  std::vector<int> seen(m.hosts.size(), 0);
  for (int at = 0; at < world; ++at) {
    const RankPlacement& p = m.placement[m.ring[at]];
    ASSERT_GE(p.host, 0);
    EXPECT_EQ(m.hosts[p.host], ranks[m.ring[at]].host_id);
    EXPECT_EQ(p.local_index, seen[p.host]++);  // the ring walks each host's ranks in local order
    if (at > 0) {
      EXPECT_GE(p.host, m.placement[m.ring[at - 1]].host);  // hosts contiguous, in order
    }
  }
  for (int r = 0; r < world; ++r) {
    const RankDescriptor& d = ranks[r];
    const RankPlacement& p = m.placement[r];
    if (d.numa_node >= 0) {
      EXPECT_EQ(p.numa_node, d.numa_node);
    }
    if (d.nics.empty()) {
      EXPECT_TRUE(p.nic.empty());
      continue;
    }
    // The chosen NIC is one of the rank's closest.
    auto it = std::find_if(d.nics.begin(), d.nics.end(), [&p](const NicCandidate& c) { return c.name == p.nic; });
    ASSERT_NE(it, d.nics.end()) << "rank " << r << " got NIC '" << p.nic << "'";
    EXPECT_EQ(it->path, d.nics.front().path);
    EXPECT_EQ(p.nic_path, d.nics.front().path);
  }
  // A pure function of its input.
  RankMapping again = mustMap(ranks, m.group_size);
  EXPECT_EQ(again.hosts, m.hosts);
  EXPECT_EQ(again.ring, m.ring);
  EXPECT_EQ(again.layout, m.layout);
  EXPECT_EQ(again.notes, m.notes);
  ASSERT_EQ(again.placement.size(), m.placement.size());
  for (size_t r = 0; r < m.placement.size(); ++r) EXPECT_TRUE(samePlacement(again.placement[r], m.placement[r]));
}

void expectGroupsInsideHosts(const RankMapping& m) {
  for (int k = 0; k < groupCount(m); ++k) EXPECT_EQ(hostsOf(m, shardGroup(m, k)).size(), 1u) << "group " << k;
}

class MapperOnEveryMachine : public ::testing::TestWithParam<const char*> {};

TEST_P(MapperOnEveryMachine, GroupsFollowHostsForOneTwoAndFourHosts) {
  Topology t = loadShipped(GetParam());
  const int per_host = ranksPerHost(t);
  for (auto [hosts, order] : {std::pair{1, RankOrder::kGpuOrder},
                              {2, RankOrder::kGpuOrder},
                              {4, RankOrder::kGpuOrder},
                              {2, RankOrder::kScrambled}}) {
    SCOPED_TRACE(::testing::Message() << hosts << " hosts of " << per_host << " ranks, order "
                                      << static_cast<int>(order));
    std::vector<RankDescriptor> ranks = simulate(t, hosts, order);

    RankMapping m = mustMap(ranks, per_host);
    expectConsistent(ranks, m);
    EXPECT_EQ(m.hosts.size(), static_cast<size_t>(hosts));
    for (int h = 0; h < hosts; ++h) EXPECT_EQ(m.hosts[h], "host" + std::to_string(h));
    expectGroupsInsideHosts(m);
    EXPECT_TRUE(m.notes.empty()) << m.notes.front();
    // Replica groups: one rank of every host, at the same position (rails).
    for (int g = 0; g < per_host; ++g) {
      std::vector<int> replicas = replicaGroup(m, g);
      EXPECT_EQ(hostsOf(m, replicas).size(), static_cast<size_t>(hosts));
      for (int r : replicas) EXPECT_EQ(m.placement[r].local_index, g);
    }

    if (per_host % 2 == 0) {
      RankMapping half = mustMap(ranks, per_host / 2);
      expectConsistent(ranks, half);
      expectGroupsInsideHosts(half);
      EXPECT_TRUE(half.notes.empty());
    }
    if (hosts >= 2) {
      RankMapping wide = mustMap(ranks, 2 * per_host);
      expectConsistent(ranks, wide);
      EXPECT_TRUE(wide.notes.empty());
      for (int k = 0; k < groupCount(wide); ++k) {
        std::set<int> spanned = hostsOf(wide, shardGroup(wide, k));
        EXPECT_EQ(spanned, (std::set<int>{2 * k, 2 * k + 1})) << "group " << k;  // two whole hosts
      }
    }
  }
}

TEST_P(MapperOnEveryMachine, InterleavedHostIdsStillGiveGroupsInsideHosts) {
  Topology t = loadShipped(GetParam());
  const int per_host = ranksPerHost(t);
  std::vector<RankDescriptor> ranks = simulate(t, 2, RankOrder::kInterleaved);
  for (int group_size : {per_host, per_host / 2}) {
    if (group_size < 1) continue;
    RankMapping m = mustMap(ranks, group_size);
    expectConsistent(ranks, m);
    expectGroupsInsideHosts(m);
    EXPECT_EQ(m.hosts, (std::vector<std::string>{"host0", "host1"}));
    for (int r = 0; r < 2 * per_host; ++r) EXPECT_EQ(m.placement[r].host, r % 2) << r;
  }
}

std::string fileLabel(const ::testing::TestParamInfo<const char*>& info) {
  std::string name = info.param;
  name = name.substr(name.find('/') + 1);
  name = name.substr(0, name.rfind('.'));
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}
INSTANTIATE_TEST_SUITE_P(Machines, MapperOnEveryMachine, ::testing::ValuesIn(kMachines), fileLabel);

// The ranks of host h, in ring order.
std::vector<int> hostRing(const RankMapping& m, int h) {
  std::vector<int> ring;
  for (int r : m.ring) {
    if (m.placement[r].host == h) ring.push_back(r);
  }
  return ring;
}

// The bus id of the PCI bridge right above a device: the switch on NCCL cloud files.
std::string switchOf(const Topology& t, int pci) {
  return t.pci[t.pci[pci].parent].bus_id;
}

TEST(Mapper, Ndv4SwitchPairsAreRingNeighboursEachWithItsOwnPort) {
  Topology t = loadShipped("nccl/azure-ndv4-topo.xml");
  std::vector<RankDescriptor> ranks = simulate(t, 2, RankOrder::kScrambled);
  RankMapping m = mustMap(ranks, 8);
  for (int h = 0; h < 2; ++h) {
    std::vector<int> ring = hostRing(m, h);
    ASSERT_EQ(ring.size(), 8u);
    std::set<std::string> used;
    for (int pair = 0; pair < 4; ++pair) {
      int a = ring[2 * pair];
      int b = ring[2 * pair + 1];
      std::string sw = switchOf(t, t.gpus[gpuNamed(t, ranks[a].gpu_bus_id)].pci);
      EXPECT_EQ(switchOf(t, t.gpus[gpuNamed(t, ranks[b].gpu_bus_id)].pci), sw) << "ring neighbours " << a << "," << b;
      EXPECT_NE(m.placement[a].nic, m.placement[b].nic);
      for (int r : {a, b}) {
        EXPECT_EQ(m.placement[r].nic_path, PathClass::kPix);
        EXPECT_EQ(switchOf(t, t.nics[nicNamed(t, m.placement[r].nic)].pci), sw);
        used.insert(m.placement[r].nic);
      }
    }
    EXPECT_EQ(used.size(), 8u);
  }
}

TEST(Mapper, P4dGpusOfOneSwitchShareItsEfa) {
  Topology t = loadShipped("nccl/aws-p4d-24xl-topo.xml");
  std::vector<RankDescriptor> ranks = simulate(t, 2, RankOrder::kScrambled);
  RankMapping m = mustMap(ranks, 8);
  std::map<std::pair<int, std::string>, int> load;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankPlacement& p = m.placement[r];
    EXPECT_EQ(p.nic_path, PathClass::kPix);
    EXPECT_EQ(switchOf(t, t.nics[nicNamed(t, p.nic)].pci), switchOf(t, t.gpus[gpuNamed(t, ranks[r].gpu_bus_id)].pci));
    ++load[{p.host, p.nic}];
  }
  EXPECT_EQ(load.size(), 8u);  // four EFAs on each of two hosts
  for (auto [nic, ranks_on_it] : load) EXPECT_EQ(ranks_on_it, 2) << nic.second;
  EXPECT_EQ(m.placement[rankOf(t, ranks, "host0", "0000:10:1c.0")].nic, "0000:10:1b.0");
  EXPECT_EQ(m.placement[rankOf(t, ranks, "host0", "0000:10:1d.0")].nic, "0000:10:1b.0");
  // Ring neighbours share a switch.
  std::vector<int> ring = hostRing(m, 1);
  for (int pair = 0; pair < 4; ++pair) {
    EXPECT_EQ(ranks[ring[2 * pair]].locality[3], ranks[ring[2 * pair + 1]].locality[3]);
  }
}

TEST(Mapper, LassenGivesEachGpuAPortOfItsSocketsHca) {
  Topology t = loadShipped("hwloc/mpibind-coral-lassen.xml");
  std::vector<RankDescriptor> ranks = simulate(t, 2, RankOrder::kScrambled);
  RankMapping m = mustMap(ranks, 4);
  const char* expected[][2] = {{"cuda0", "mlx5_0"}, {"cuda1", "mlx5_1"}, {"cuda2", "mlx5_2"}, {"cuda3", "mlx5_3"}};
  for (int h = 0; h < 2; ++h) {
    std::string host = "host" + std::to_string(h);
    std::vector<int> ring;
    for (auto [gpu, nic] : expected) {
      int r = rankOf(t, ranks, host, gpu);
      ring.push_back(r);
      EXPECT_EQ(m.placement[r].nic, nic) << gpu;
      EXPECT_EQ(m.placement[r].nic_path, PathClass::kPhb) << gpu;
      EXPECT_EQ(m.placement[r].numa_node, gpuNamed(t, gpu) < 2 ? 0 : 8) << gpu;
    }
    EXPECT_EQ(hostRing(m, h), ring);  // socket 0's GPUs, then socket 1's
  }
}

TEST(Mapper, TiogaGcdsShareTheSlingshotNicOfTheirNumaNode) {
  Topology t = loadShipped("hwloc/mpibind-eas-tioga.xml");
  std::vector<RankDescriptor> ranks = simulate(t, 2, RankOrder::kScrambled);
  RankMapping m = mustMap(ranks, 8);
  std::map<std::pair<int, std::string>, int> load;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankPlacement& p = m.placement[r];
    const Nic& nic = t.nics[nicNamed(t, p.nic)];
    EXPECT_EQ(nic.kind, NicKind::kFabric) << p.nic;
    EXPECT_EQ(t.numa_nodes[t.anchors[nic.anchor].numa.front()].os_index, p.numa_node) << "rank " << r;
    ++load[{p.host, p.nic}];
  }
  for (auto [nic, ranks_on_it] : load) EXPECT_EQ(ranks_on_it, 2) << nic.second;
  // The two GCDs of a NUMA node are ring neighbours, nodes in order.
  std::vector<int> ring = hostRing(m, 0);
  for (int at = 0; at < 8; ++at) EXPECT_EQ(m.placement[ring[at]].numa_node, at / 2) << at;
}

TEST(Mapper, Dgx2WithoutNicsKeepsSwitchSiblingsTogether) {
  Topology t = loadShipped("hwloc/hwloc-nvidiaDGX2.xml");
  std::vector<RankDescriptor> ranks = simulate(t, 2, RankOrder::kScrambled);
  RankMapping m = mustMap(ranks, 16);
  for (const RankPlacement& p : m.placement) {
    EXPECT_TRUE(p.nic.empty());
    EXPECT_EQ(p.nic_path, PathClass::kSys);
  }
  // nvml0..15 in order: pairs under one switch port, quads under one switch, eights per socket.
  std::vector<int> ring = hostRing(m, 1);
  for (int at = 0; at < 16; ++at) {
    EXPECT_EQ(t.gpus[gpuNamed(t, ranks[ring[at]].gpu_bus_id)].name, "nvml" + std::to_string(at));
  }
}

TEST(Mapper, WholeIoCuda0UsesTheInfinibandPortOnItsSwitch) {
  Topology t = loadShipped("hwloc/hwloc-32em64t-2n8c2t-pci-wholeio.xml");
  std::vector<RankDescriptor> ranks = simulate(t, 2, RankOrder::kScrambled);
  RankMapping m = mustMap(ranks, 4);
  for (int h = 0; h < 2; ++h) {
    const RankPlacement& p = m.placement[rankOf(t, ranks, "host" + std::to_string(h), "cuda0")];
    EXPECT_EQ(p.nic, "mlx5_0");
    EXPECT_EQ(p.nic_path, PathClass::kPix);
  }
  for (const RankPlacement& p : m.placement) EXPECT_EQ(p.nic, "mlx5_0");  // the only fabric port
}

TEST(Mapper, UnboundCpuOnlyRanksAreSpreadOverNumaNodes) {
  Topology t = loadShipped("nccl/aws-g5.48xl-topo.xml");  // no GPUs, two NUMA nodes
  std::vector<RankDescriptor> ranks = simulate(t, 2);
  RankMapping m = mustMap(ranks, 4);
  for (int h = 0; h < 2; ++h) {
    std::vector<int> ring = hostRing(m, h);
    std::vector<int> nodes;
    for (int r : ring) nodes.push_back(m.placement[r].numa_node);
    EXPECT_EQ(nodes, (std::vector<int>{0, 0, 1, 1}));
  }
  // A rank that knows its node keeps it; with no node list at all, nothing to spread over.
  ranks[1].numa_node = 1;
  ranks[2].host_numa_nodes.clear();
  RankMapping bound = mustMap(ranks, 4);
  EXPECT_EQ(bound.placement[1].numa_node, 1);
  EXPECT_EQ(bound.placement[2].numa_node, -1);
}

TEST(Mapper, RanksWithFewerCloseNicsChooseFirst) {
  // Rank 0 has two equally close NICs, rank 1 only one of them: in rank order rank 0 would take it and rank 1
  // would share; the rank with fewer choices goes first.
  std::vector<RankDescriptor> ranks(2);
  for (RankDescriptor& d : ranks) d.host_id = "h";
  ranks[0].nics = {{"a", PathClass::kPhb, 0}, {"b", PathClass::kPhb, 0}};
  ranks[1].nics = {{"a", PathClass::kPix, 0}, {"b", PathClass::kSys, 0}};
  RankMapping m = mustMap(ranks, 2);
  EXPECT_EQ(m.placement[0].nic, "b");
  EXPECT_EQ(m.placement[0].nic_path, PathClass::kPhb);
  EXPECT_EQ(m.placement[1].nic, "a");
  EXPECT_EQ(m.placement[1].nic_path, PathClass::kPix);
}

TEST(Mapper, InconsistentHostsAreAMismatchNamingBothRanks) {
  Topology ndv4 = loadShipped("nccl/azure-ndv4-topo.xml");
  Topology p4d = loadShipped("nccl/aws-p4d-24xl-topo.xml");
  std::vector<RankDescriptor> ranks = simulate(ndv4, 2);
  Result<RankDescriptor> other = describeRank(p4d, "host0", "0000:10:1c.0", -1);  // a second machine "host0"
  ASSERT_TRUE(other.isOk());
  ranks[5] = other.value();
  Result<RankMapping> m = mapRanks(ranks, 8);
  ASSERT_FALSE(m.isOk());
  EXPECT_EQ(m.status().code(), PSDP_ERR_MISMATCH);
  const std::string& message = m.status().message();
  for (const char* part : {"ranks 0 and 5", "host0", "PSDP_HOST_ID"}) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(Mapper, RefusesNoRanksAndGroupSizesThatDoNotDivide) {
  EXPECT_EQ(mapRanks({}, 1).status().code(), PSDP_ERR_INVALID_ARGUMENT);
  std::vector<RankDescriptor> ranks = simulate(loadShipped("nccl/azure-ndv4-topo.xml"), 1);
  for (int group_size : {0, -1, 3, 16}) {
    Result<RankMapping> m = mapRanks(ranks, group_size);
    ASSERT_FALSE(m.isOk()) << group_size;
    EXPECT_EQ(m.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  }
}

TEST(Mapper, SharedGpusAreANoteNotAnError) {
  std::vector<RankDescriptor> ranks = simulate(loadShipped("nccl/azure-ndv4-topo.xml"), 1);
  ranks[6] = ranks[2];
  RankMapping m = mustMap(ranks, 8);
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_EQ(m.notes[0], "ranks 2 and 6 share GPU " + ranks[2].gpu_bus_id + " on host host0");
  expectConsistent(ranks, m);
}

TEST(Mapper, UnequalHostsAndStraddlingGroupsAreNoted) {
  Topology t = loadShipped("nccl/azure-ndv4-topo.xml");
  std::vector<RankDescriptor> ranks = simulate(t, 2);
  ranks.resize(12);  // host0: 8 ranks, host1: 4
  RankMapping fits = mustMap(ranks, 4);
  expectGroupsInsideHosts(fits);
  EXPECT_EQ(fits.notes, (std::vector<std::string>{"hosts run unequal numbers of ranks (host0: 8, host1: 4)"}));
  RankMapping whole = mustMap(ranks, 12);
  EXPECT_EQ(whole.notes.size(), 1u);  // one group of both whole hosts: only the unequal counts
  RankMapping straddles = mustMap(ranks, 3);
  expectConsistent(ranks, straddles);
  EXPECT_EQ(straddles.notes.back(), "shard groups of 3 straddle hosts (host0: 8, host1: 4)");

  std::vector<RankDescriptor> equal = simulate(t, 2);
  RankMapping three = mustMap(std::span(equal).first(12), 6);  // 8 + 4 again, groups of 6
  EXPECT_EQ(three.notes.size(), 2u);
  RankMapping odd = mustMap(simulate(loadShipped("hwloc/mpibind-coral-lassen.xml"), 3), 6);
  EXPECT_EQ(odd.notes, (std::vector<std::string>{"shard groups of 6 straddle hosts of 4 ranks"}));
}

}  // namespace
}  // namespace psdp::topo
