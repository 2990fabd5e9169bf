// Rank descriptors on the real machine files, and their wire form: round trips, and every truncation and
// random damage of a real descriptor refused cleanly (written to pass under AddressSanitizer).
#include "topo/rank_descriptor.h"

#include <gtest/gtest.h>

#include <random>

#include "unit/topo/topology_fixtures.h"

namespace psdp::topo {
namespace {

using testing::gpuNamed;
using testing::loadShipped;

std::string busIdOf(const Topology& t, std::string_view gpu) {
  int g = gpuNamed(t, gpu);
  return g < 0 ? std::string() : t.pci[t.gpus[g].pci].bus_id;
}

RankDescriptor mustDescribe(const Topology& t, const std::string& gpu_bus_id, int cpu_numa_node = -1) {
  Result<RankDescriptor> d = describeRank(t, "host0", gpu_bus_id, cpu_numa_node);
  EXPECT_TRUE(d.isOk()) << d.status().toString();
  return d.isOk() ? std::move(d).value() : RankDescriptor{};
}

void expectSame(const RankDescriptor& a, const RankDescriptor& b) {
  EXPECT_EQ(a.host_id, b.host_id);
  EXPECT_EQ(a.machine_digest, b.machine_digest);
  EXPECT_EQ(a.numa_node, b.numa_node);
  EXPECT_EQ(a.host_numa_nodes, b.host_numa_nodes);
  EXPECT_EQ(a.gpu_bus_id, b.gpu_bus_id);
  EXPECT_EQ(a.locality, b.locality);
  ASSERT_EQ(a.nics.size(), b.nics.size());
  for (size_t i = 0; i < a.nics.size(); ++i) {
    EXPECT_EQ(a.nics[i].name, b.nics[i].name);
    EXPECT_EQ(a.nics[i].path, b.nics[i].path);
    EXPECT_EQ(a.nics[i].speed_mbps, b.nics[i].speed_mbps);
  }
}

TEST(RankDescriptor, LassenGpuOnTheSecondSocket) {
  Topology t = loadShipped("hwloc/mpibind-coral-lassen.xml");
  RankDescriptor d = mustDescribe(t, busIdOf(t, "cuda2"));
  EXPECT_EQ(d.host_id, "host0");
  EXPECT_EQ(d.gpu_bus_id, "0035:03:00.0");
  EXPECT_EQ(d.numa_node, 8);  // POWER9's sparse os index
  EXPECT_EQ(d.host_numa_nodes, (std::vector<int>{0, 8}));
  // The package os index is the POWER9 chip id (8); the host bridge has no bus id, so its index stands in.
  EXPECT_EQ(d.locality, (std::vector<std::string>{"pkg8", "numa8", "cpu1", "bridge#28", "0035:00:00.0", "0035:01:00.0",
                                                  "0035:02:04.0", "0035:03:00.0"}));
  // Fabric ports only (the two Ethernet functions are left out), the socket's own HCA first.
  ASSERT_EQ(d.nics.size(), 4u);
  EXPECT_EQ(d.nics[0].name, "mlx5_2");
  EXPECT_EQ(d.nics[1].name, "mlx5_3");
  EXPECT_EQ(d.nics[0].path, PathClass::kPhb);
  EXPECT_EQ(d.nics[1].path, PathClass::kPhb);
  EXPECT_EQ(d.nics[2].name, "mlx5_0");
  EXPECT_EQ(d.nics[2].path, PathClass::kSys);
}

TEST(RankDescriptor, Ndv4GpuListsItsSwitchNicsFirst) {
  Topology t = loadShipped("nccl/azure-ndv4-topo.xml");
  RankDescriptor d = mustDescribe(t, "0003:00:00.0");
  EXPECT_EQ(d.numa_node, 0);
  EXPECT_EQ(d.locality, (std::vector<std::string>{"pkg?", "numa0", "cpu0", "ffff:ff:01.0", "0003:00:00.0"}));
  ASSERT_EQ(d.nics.size(), 8u);
  EXPECT_EQ(d.nics[0].name, "0103:00:00.0");
  EXPECT_EQ(d.nics[1].name, "0104:00:00.0");
  EXPECT_EQ(d.nics[0].path, PathClass::kPix);
  EXPECT_EQ(d.nics[1].path, PathClass::kPix);
  EXPECT_EQ(d.nics[0].speed_mbps, t.nics[0].speed_mbps);
  for (size_t i = 1; i < d.nics.size(); ++i) EXPECT_LE(d.nics[i - 1].path, d.nics[i].path);
}

TEST(RankDescriptor, BusIdsAreNormalised) {
  Topology t = loadShipped("hwloc/mpibind-cts1-pascal.xml");
  for (std::string spelling : {"0000:04:00.0", "00000000:04:00.0", "04:00.0"}) {
    EXPECT_EQ(mustDescribe(t, spelling).gpu_bus_id, "0000:04:00.0") << spelling;
  }
  Topology ndv4 = loadShipped("nccl/azure-ndv4-topo.xml");
  EXPECT_EQ(mustDescribe(ndv4, "000D:00:00.0").gpu_bus_id, "000d:00:00.0");
}

TEST(RankDescriptor, UnknownGpuIsAnInvalidArgumentNamingIt) {
  Topology t = loadShipped("hwloc/mpibind-cts1-pascal.xml");
  Result<RankDescriptor> d = describeRank(t, "h", "0000:99:00.0", -1);
  ASSERT_FALSE(d.isOk());
  EXPECT_EQ(d.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(d.status().message().find("0000:99:00.0"), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("0000:04:00.0"), std::string::npos) << d.status().message();

  // A CPU binding the host does not have is a hint to ignore, not an error.
  RankDescriptor numa = mustDescribe(t, "", 7);
  EXPECT_EQ(numa.numa_node, -1);
  EXPECT_TRUE(numa.locality.empty());

  Result<RankDescriptor> long_host = describeRank(t, std::string(256, 'h'), "", -1);
  ASSERT_FALSE(long_host.isOk());
  EXPECT_EQ(long_host.status().code(), PSDP_ERR_INVALID_ARGUMENT);
}

TEST(RankDescriptor, CpuOnlyRanksClassifyNicsByNumaNode) {
  Topology t = loadShipped("hwloc/mpibind-coral-lassen.xml");
  RankDescriptor d = mustDescribe(t, "", 8);
  EXPECT_EQ(d.numa_node, 8);
  EXPECT_TRUE(d.gpu_bus_id.empty());
  EXPECT_EQ(d.locality, (std::vector<std::string>{"pkg8", "numa8"}));
  ASSERT_EQ(d.nics.size(), 4u);
  EXPECT_EQ(d.nics[0].name, "mlx5_2");
  EXPECT_EQ(d.nics[0].path, PathClass::kPhb);
  EXPECT_EQ(d.nics[2].name, "mlx5_0");
  EXPECT_EQ(d.nics[2].path, PathClass::kSys);

  // Tioga: one package, four nodes; a NIC of another node of the socket is NODE.
  Topology tioga = loadShipped("hwloc/mpibind-eas-tioga.xml");
  RankDescriptor c = mustDescribe(tioga, "", 0);
  ASSERT_EQ(c.nics.size(), 4u);
  EXPECT_EQ(c.nics[0].name, "hsi2");
  EXPECT_EQ(c.nics[0].path, PathClass::kPhb);
  for (size_t i = 1; i < c.nics.size(); ++i) EXPECT_EQ(c.nics[i].path, PathClass::kNode) << c.nics[i].name;

  // Unbound: no locality, every NIC equally far.
  RankDescriptor u = mustDescribe(t, "", -1);
  EXPECT_EQ(u.numa_node, -1);
  EXPECT_TRUE(u.locality.empty());
  for (const NicCandidate& nic : u.nics) EXPECT_EQ(nic.path, PathClass::kSys);
}

TEST(RankDescriptor, DigestIsAPropertyOfTheMachine) {
  Topology a = loadShipped("nccl/azure-ndv4-topo.xml");
  Topology b = loadShipped("nccl/azure-ndv4-topo.xml");
  Topology p4d = loadShipped("nccl/aws-p4d-24xl-topo.xml");
  uint64_t digest = mustDescribe(a, "").machine_digest;
  EXPECT_EQ(mustDescribe(b, "0001:00:00.0").machine_digest, digest);
  EXPECT_NE(mustDescribe(p4d, "").machine_digest, digest);
  // GPU names are left out (CUDA_VISIBLE_DEVICES renumbers cuda*), bus ids are not.
  Topology renamed = a;
  renamed.gpus[0].name = "cuda7";
  EXPECT_EQ(mustDescribe(renamed, "").machine_digest, digest);
  Topology moved = a;
  moved.pci[moved.gpus[0].pci].bus_id = "0009:00:00.0";
  EXPECT_NE(mustDescribe(moved, "").machine_digest, digest);
  // Pinned: FNV-1a of five zero counts (40 zero bytes), so the function cannot change unnoticed between
  // releases whose ranks must agree.
  EXPECT_EQ(mustDescribe(Topology{}, "").machine_digest, 0x40d69e0cf0f65c45ull);
}

TEST(RankDescriptorWire, RoundTripsEveryRankOfEveryMachine) {
  for (const char* file : {"hwloc/mpibind-coral-lassen.xml", "hwloc/mpibind-eas-tioga.xml",
                           "hwloc/hwloc-nvidiaDGX2.xml", "nccl/azure-ndv4-topo.xml", "nccl/aws-p4d-24xl-topo.xml"}) {
    Topology t = loadShipped(file);
    for (const Gpu& g : t.gpus) {
      RankDescriptor d = mustDescribe(t, t.pci[g.pci].bus_id);
      std::vector<std::byte> wire = encodeDescriptor(d);
      EXPECT_LT(wire.size(), 1024u) << file;
      Result<RankDescriptor> back = decodeDescriptor(wire);
      ASSERT_TRUE(back.isOk()) << file << ": " << back.status().toString();
      expectSame(d, back.value());
    }
  }
  RankDescriptor odd;  // every field at an edge
  odd.host_id = std::string(255, 'x');
  odd.machine_digest = ~0ull;
  odd.numa_node = -1;
  odd.host_numa_nodes = {0, 2147483647};
  odd.locality.assign(64, std::string(255, 't'));
  odd.nics.assign(64, NicCandidate{"", PathClass::kSys, ~0ull});
  Result<RankDescriptor> back = decodeDescriptor(encodeDescriptor(odd));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  expectSame(odd, back.value());
}

void expectRefused(std::span<const std::byte> bytes, std::string_view why) {
  Result<RankDescriptor> d = decodeDescriptor(bytes);
  ASSERT_FALSE(d.isOk()) << why;
  EXPECT_EQ(d.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(d.status().message().find(why), std::string::npos) << d.status().message();
}

TEST(RankDescriptorWire, RefusesMalformedBuffersByName) {
  Topology t = loadShipped("nccl/azure-ndv4-topo.xml");
  std::vector<std::byte> wire = encodeDescriptor(mustDescribe(t, "0003:00:00.0"));
  expectRefused({}, "truncated");
  std::vector<std::byte> bad = wire;
  bad[0] = std::byte{'X'};
  expectRefused(bad, "magic");
  bad = wire;
  bad[4] = std::byte{2};
  expectRefused(bad, "version 2");
  bad = wire;
  bad.push_back(std::byte{0});
  expectRefused(bad, "1 trailing bytes");

  RankDescriptor big;
  big.host_id = std::string(256, 'h');
  expectRefused(encodeDescriptor(big), "host id is 256 bytes");
  big = RankDescriptor{};
  big.nics.resize(65);
  expectRefused(encodeDescriptor(big), "NIC count 65");
  big = RankDescriptor{};
  big.locality.resize(70000);  // saturates at 65535, never wraps to a small count
  expectRefused(encodeDescriptor(big), "locality token count 65535");
  big = RankDescriptor{};
  big.host_numa_nodes.resize(65);
  expectRefused(encodeDescriptor(big), "NUMA node count 65");
  big = RankDescriptor{};
  big.numa_node = -2;
  expectRefused(encodeDescriptor(big), "NUMA node -2");
  big = RankDescriptor{};
  big.nics = {NicCandidate{"n", PathClass::kSys, 0}};
  bad = encodeDescriptor(big);
  bad[bad.size() - 9] = std::byte{7};  // the path class byte, before the 8 bytes of speed
  expectRefused(bad, "path class 7");
}

TEST(RankDescriptorWire, EveryTruncationIsRefused) {
  Topology t = loadShipped("hwloc/mpibind-coral-lassen.xml");
  std::vector<std::byte> wire = encodeDescriptor(mustDescribe(t, busIdOf(t, "cuda1")));
  for (size_t n = 0; n < wire.size(); ++n) {
    // A copy of exactly n bytes, so that a read past the end is a heap overflow ASan reports.
    std::vector<std::byte> prefix(wire.begin(), wire.begin() + n);
    Result<RankDescriptor> d = decodeDescriptor(prefix);
    ASSERT_FALSE(d.isOk()) << n;
    EXPECT_EQ(d.status().code(), PSDP_ERR_INVALID_ARGUMENT) << n;
  }
}

TEST(RankDescriptorWire, RandomDamageNeverCrashes) {
  Topology t = loadShipped("nccl/azure-ndv4-topo.xml");
  std::vector<std::byte> wire = encodeDescriptor(mustDescribe(t, "000b:00:00.0"));
  std::mt19937 rng(12345);  // fixed: a failure reproduces
  int refused = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    std::vector<std::byte> damaged = wire;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      damaged[rng() % damaged.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
    }
    if (trial % 3 == 0) damaged.resize(rng() % (damaged.size() + 1));
    Result<RankDescriptor> d = decodeDescriptor(damaged);
    if (!d.isOk()) {
      ++refused;
      EXPECT_EQ(d.status().code(), PSDP_ERR_INVALID_ARGUMENT);
      continue;
    }
    // Damage the format cannot see (a flipped digest bit or name letter) still decodes to what re-encodes
    // to the same bytes.
    EXPECT_EQ(encodeDescriptor(d.value()), damaged) << trial;
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace psdp::topo
