// The model's helpers: bus id text and how PCI identities classify GPUs and fabric ports.
#include "topo/topology.h"

#include <gtest/gtest.h>

namespace psdp::topo {
namespace {

TEST(Topology, BusIdsAreLowercaseAndPadded) {
  EXPECT_EQ(formatBusId(0, 0x84, 0, 1), "0000:84:00.1");
  EXPECT_EQ(formatBusId(0x35, 0x3, 0x1f, 7), "0035:03:1f.7");
}

TEST(Topology, GpusAreDisplayFunctionsOfGpuVendors) {
  EXPECT_TRUE(isGpuFunction(0x0302, 0x10de));   // NVIDIA 3D controller (V100, A100)
  EXPECT_TRUE(isGpuFunction(0x0300, 0x10de));   // NVIDIA VGA (workstation boards)
  EXPECT_TRUE(isGpuFunction(0x0380, 0x1002));   // AMD Instinct
  EXPECT_TRUE(isGpuFunction(0x0300, 0x1002));   // AMD Radeon
  EXPECT_FALSE(isGpuFunction(0x0300, 0x102b));  // Matrox BMC VGA
  EXPECT_FALSE(isGpuFunction(0x0300, 0x1a03));  // ASPEED BMC VGA
  EXPECT_FALSE(isGpuFunction(0x0680, 0x10de));  // NVSwitch
  EXPECT_FALSE(isGpuFunction(0x0207, 0x15b3));
}

TEST(Topology, FabricFunctions) {
  EXPECT_TRUE(isFabricFunction(0x0207, 0x15b3));   // ConnectX InfiniBand
  EXPECT_TRUE(isFabricFunction(0x0200, 0x15b3));   // ConnectX in Ethernet mode (RoCE)
  EXPECT_TRUE(isFabricFunction(0x0200, 0x1d0f));   // EFA
  EXPECT_TRUE(isFabricFunction(0x0200, 0x17db));   // Slingshot
  EXPECT_FALSE(isFabricFunction(0x0200, 0x8086));  // Intel 1 GbE
  EXPECT_FALSE(isFabricFunction(0x0200, 0x14e4));  // Broadcom
}

TEST(Topology, CountsNicsByKind) {
  Topology t;
  t.nics = {Nic{"mlx5_0", {}, NicKind::kFabric, -1, 0, 0}, Nic{"eth0", {}, NicKind::kEthernet, -1, 0, 0},
            Nic{"mlx5_1", {}, NicKind::kFabric, -1, 0, 0}};
  EXPECT_EQ(countNics(t, NicKind::kFabric), 2);
  EXPECT_EQ(countNics(t, NicKind::kEthernet), 1);
}

}  // namespace
}  // namespace psdp::topo
