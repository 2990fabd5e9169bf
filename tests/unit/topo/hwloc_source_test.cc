// hwloc XML import: how GPUs, NICs, NUMA nodes and NVLink come out of the real machine files, including the
// labelling differences the MANIFEST warns about.
#include "topo/hwloc_source.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "unit/topo/topology_fixtures.h"

namespace psdp::topo {
namespace {

using testing::gpuNamed;
using testing::loadShipped;
using testing::nicNamed;

TEST(HwlocSource, GpusByPciClassAndVendorWithOrWithoutOsDevices) {
  Topology t = loadShipped("hwloc/hwloc-32em64t-2n8c2t-pci-wholeio.xml");
  ASSERT_EQ(t.gpus.size(), 4u);
  const Gpu& k40 = t.gpus[gpuNamed(t, "cuda0")];
  EXPECT_EQ(t.pci[k40.pci].bus_id, "0000:84:00.0");
  EXPECT_EQ(t.pci[k40.pci].class_id, 0x0302u);
  EXPECT_EQ(k40.os_names, (std::vector<std::string>{"cuda0", "card0"}));
  // The two M2075 without OS devices are named by bus id; the AMD Radeon (VGA class) is a GPU too.
  EXPECT_EQ(t.gpus[gpuNamed(t, "0000:03:00.0")].name, "0000:03:00.0");
  EXPECT_EQ(t.gpus[gpuNamed(t, "0000:83:00.0")].name, "0000:83:00.0");
  const Gpu& radeon = t.gpus[gpuNamed(t, "0000:84:00.1")];
  EXPECT_EQ(t.pci[radeon.pci].vendor_id, 0x1002);
  EXPECT_EQ(radeon.os_names, (std::vector<std::string>{"opencl0d1"}));
  // The Matrox VGA of the board management controller is not a GPU.
  for (const Gpu& gpu : t.gpus) EXPECT_NE(t.pci[gpu.pci].bus_id, "0000:05:03.0");
}

TEST(HwlocSource, NicsPreferTheVerbsNameAndKnowTheirKind) {
  Topology t = loadShipped("hwloc/hwloc-32em64t-2n8c2t-pci-wholeio.xml");
  const Nic& cx4 = t.nics[nicNamed(t, "mlx5_0")];
  EXPECT_EQ(cx4.kind, NicKind::kFabric);
  EXPECT_EQ(cx4.os_names, (std::vector<std::string>{"ib0", "mlx5_0"}));
  EXPECT_EQ(nicNamed(t, "ib0"), nicNamed(t, "mlx5_0"));
  EXPECT_EQ(t.nics[nicNamed(t, "eth0")].kind, NicKind::kEthernet);
  EXPECT_EQ(t.nics[nicNamed(t, "eth1")].kind, NicKind::kEthernet);
}

TEST(HwlocSource, CpusAndSparseNumaIndexes) {
  Topology t = loadShipped("hwloc/mpibind-coral-lassen.xml");
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  EXPECT_EQ(t.numa_nodes[0].os_index, 0);
  EXPECT_EQ(t.numa_nodes[1].os_index, 8);
  EXPECT_EQ(t.numa_nodes[0].package, 0);
  EXPECT_EQ(t.numa_nodes[1].package, 1);
  EXPECT_GT(t.numa_nodes[0].memory_bytes, 0u);
  EXPECT_EQ(t.cores.size(), 40u);
  EXPECT_EQ(t.cores.front().pus, 4);  // POWER9 SMT4
  // Each socket's GPUs and HCA ports hang off that socket.
  EXPECT_EQ(t.anchors[t.gpus[gpuNamed(t, "cuda0")].anchor].numa, std::vector<int>{0});
  EXPECT_EQ(t.anchors[t.gpus[gpuNamed(t, "cuda3")].anchor].numa, std::vector<int>{1});
  EXPECT_EQ(t.anchors[t.nics[nicNamed(t, "mlx5_2")].anchor].numa, std::vector<int>{1});
}

TEST(HwlocSource, PciTreeKeepsBridgesAndSwitches) {
  Topology t = loadShipped("hwloc/mpibind-coral-lassen.xml");
  // cuda0 sits on a PLX downstream port, below the switch's upstream port, below a root port, below the
  // host bridge of domain 0004.
  int at = t.pci[t.gpus[gpuNamed(t, "cuda0")].pci].parent;
  std::vector<std::string> chain;
  for (; at >= 0 && t.pci[at].kind == PciKind::kBridge; at = t.pci[at].parent) chain.push_back(t.pci[at].bus_id);
  EXPECT_EQ(chain, (std::vector<std::string>{"0004:02:0a.0", "0004:01:00.0", "0004:00:00.0"}));
  ASSERT_GE(at, 0);
  EXPECT_EQ(t.pci[at].kind, PciKind::kHostBridge);
  EXPECT_EQ(t.pci[at].parent, -1);
}

// The DGX-2 labels its V100s `nvml*` as COPROC devices without a subtype: found by their PCI function.
TEST(HwlocSource, DgxTwoGpusAndNvswitchReachability) {
  Topology t = loadShipped("hwloc/hwloc-nvidiaDGX2.xml");
  ASSERT_EQ(t.gpus.size(), 16u);
  for (int i = 0; i < 16; ++i) {
    const Gpu& gpu = t.gpus[gpuNamed(t, "nvml" + std::to_string(i))];
    EXPECT_EQ(t.pci[gpu.pci].class_id, 0x0302u);
    // GPU-to-GPU entries of the matrix are all 0: peers are reached through the six NVSwitches of each
    // baseboard. The file records no switch-to-switch trunk, so the two baseboards stay apart.
    std::vector<int> expect;
    int board = gpuNamed(t, "nvml" + std::to_string(i)) < 8 ? 0 : 8;
    for (int p = board; p < board + 8; ++p) {
      if (p != gpuNamed(t, "nvml" + std::to_string(i))) expect.push_back(p);
    }
    EXPECT_EQ(gpu.nvlink_peers, expect) << gpu.name;
  }
}

// POWER8 Minsky: NVLink pairs GPU-GPU and GPU-CPU; a path through the CPU is not GPU NVLink.
TEST(HwlocSource, NvlinkThroughACpuDoesNotJoinGpus) {
  Topology t = loadShipped("hwloc/hwloc-power8gpudistances.xml");
  EXPECT_EQ(t.gpus[gpuNamed(t, "cuda0")].nvlink_peers, std::vector<int>{gpuNamed(t, "cuda1")});
  EXPECT_EQ(t.gpus[gpuNamed(t, "cuda2")].nvlink_peers, std::vector<int>{gpuNamed(t, "cuda3")});
  EXPECT_EQ(t.gpus[gpuNamed(t, "cuda0")].os_names.front(), "cuda0");
}

// MI250X GCDs report display class 0x0380 and RSMI devices; Slingshot NICs are Ethernet-class functions
// from HPE, which makes them fabric ports, unlike the Intel management port.
TEST(HwlocSource, AmdGcdsAndSlingshotNics) {
  Topology t = loadShipped("hwloc/mpibind-eas-tioga.xml");
  for (int i = 0; i < 8; ++i) {
    const Gpu& gcd = t.gpus[gpuNamed(t, "rsmi" + std::to_string(i))];
    EXPECT_EQ(t.pci[gcd.pci].class_id, 0x0380u);
    EXPECT_EQ(t.pci[gcd.pci].vendor_id, 0x1002);
  }
  for (int i = 0; i < 4; ++i) EXPECT_EQ(t.nics[nicNamed(t, "hsi" + std::to_string(i))].kind, NicKind::kFabric);
  EXPECT_EQ(t.nics[nicNamed(t, "ens2")].kind, NicKind::kEthernet);
  // One Slingshot NIC per NUMA node.
  std::vector<int> numa_of_hsi;
  for (int i = 0; i < 4; ++i) {
    const CpuAnchor& anchor = t.anchors[t.nics[nicNamed(t, "hsi" + std::to_string(i))].anchor];
    ASSERT_EQ(anchor.numa.size(), 1u);
    numa_of_hsi.push_back(t.numa_nodes[anchor.numa[0]].os_index);
  }
  std::sort(numa_of_hsi.begin(), numa_of_hsi.end());
  EXPECT_EQ(numa_of_hsi, (std::vector<int>{0, 1, 2, 3}));
}

TEST(HwlocSource, ReadsADocumentFromMemory) {
  Result<Topology> bad = readHwlocXml("<topology>", "inline");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(bad.status().message().find("inline"), std::string::npos);
}

}  // namespace
}  // namespace psdp::topo
