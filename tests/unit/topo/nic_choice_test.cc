// NIC choice per GPU on the real machines, and the spreading rule on hand-built cases.
#include "topo/nic_choice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "unit/topo/topology_fixtures.h"

namespace psdp::topo {
namespace {

using testing::gpuNamed;
using testing::loadShipped;
using testing::nicNamed;

// nic index -> how many GPUs chose it.
std::map<int, int> loadPerNic(const std::vector<NicChoice>& choices) {
  std::map<int, int> load;
  for (const NicChoice& c : choices) ++load[c.nic];
  return load;
}

void expectOnePerGpuInOrder(const Topology& t, const std::vector<NicChoice>& choices) {
  ASSERT_EQ(choices.size(), t.gpus.size());
  for (size_t g = 0; g < choices.size(); ++g) EXPECT_EQ(choices[g].gpu, static_cast<int>(g));
}

TEST(NicChoice, Ndv4GivesEachA100ItsOwnHdrPort) {
  Topology t = loadShipped("nccl/azure-ndv4-topo.xml");
  std::vector<NicChoice> choices = chooseNics(t);
  expectOnePerGpuInOrder(t, choices);
  for (const NicChoice& c : choices) EXPECT_EQ(c.path, PathClass::kPix);
  std::map<int, int> load = loadPerNic(choices);
  EXPECT_EQ(load.size(), 8u);
  for (auto [nic, gpus] : load) EXPECT_EQ(gpus, 1) << t.nics[nic].name;
}

TEST(NicChoice, P4dSharesEachEfaBetweenTheTwoGpusOfItsSwitch) {
  Topology t = loadShipped("nccl/aws-p4d-24xl-topo.xml");
  std::vector<NicChoice> choices = chooseNics(t);
  expectOnePerGpuInOrder(t, choices);
  EXPECT_EQ(choices[gpuNamed(t, "0000:10:1c.0")].nic, nicNamed(t, "0000:10:1b.0"));
  EXPECT_EQ(choices[gpuNamed(t, "0000:10:1d.0")].nic, nicNamed(t, "0000:10:1b.0"));
  EXPECT_EQ(choices[gpuNamed(t, "0000:a0:1d.0")].nic, nicNamed(t, "0000:a0:1b.0"));
  for (const NicChoice& c : choices) EXPECT_EQ(c.path, PathClass::kPix);
  for (auto [nic, gpus] : loadPerNic(choices)) EXPECT_EQ(gpus, 2) << t.nics[nic].name;
}

TEST(NicChoice, LassenSpreadsOverBothPortsOfEachSocket) {
  Topology t = loadShipped("hwloc/mpibind-coral-lassen.xml");
  std::vector<NicChoice> choices = chooseNics(t);
  expectOnePerGpuInOrder(t, choices);
  EXPECT_EQ(choices[gpuNamed(t, "cuda0")].nic, nicNamed(t, "mlx5_0"));
  EXPECT_EQ(choices[gpuNamed(t, "cuda1")].nic, nicNamed(t, "mlx5_1"));
  EXPECT_EQ(choices[gpuNamed(t, "cuda2")].nic, nicNamed(t, "mlx5_2"));
  EXPECT_EQ(choices[gpuNamed(t, "cuda3")].nic, nicNamed(t, "mlx5_3"));
  for (const NicChoice& c : choices) EXPECT_EQ(c.path, PathClass::kPhb);
}

TEST(NicChoice, PascalGpusShareTheOnlyFabricPortAndSkipEthernet) {
  Topology t = loadShipped("hwloc/mpibind-cts1-pascal.xml");
  std::vector<NicChoice> choices = chooseNics(t);
  expectOnePerGpuInOrder(t, choices);
  for (const NicChoice& c : choices) {
    EXPECT_EQ(c.nic, nicNamed(t, "mlx5_0"));
    EXPECT_EQ(c.path, PathClass::kPix);
  }
}

TEST(NicChoice, TiogaUsesTheSlingshotNicOfEachNumaNode) {
  Topology t = loadShipped("hwloc/mpibind-eas-tioga.xml");
  std::vector<NicChoice> choices = chooseNics(t);
  expectOnePerGpuInOrder(t, choices);
  for (const NicChoice& c : choices) {
    EXPECT_NE(c.nic, nicNamed(t, "ens2"));
    EXPECT_LE(c.path, PathClass::kNode);
    // The NIC is on the GPU's NUMA node.
    EXPECT_EQ(t.anchors[t.gpus[c.gpu].anchor].numa, t.anchors[t.nics[c.nic].anchor].numa) << t.gpus[c.gpu].name;
  }
  for (auto [nic, gpus] : loadPerNic(choices)) EXPECT_EQ(gpus, 2) << t.nics[nic].name;
}

TEST(NicChoice, WholeIoPrefersTheFabricPortEvenFarAway) {
  Topology t = loadShipped("hwloc/hwloc-32em64t-2n8c2t-pci-wholeio.xml");
  std::vector<NicChoice> choices = chooseNics(t);
  expectOnePerGpuInOrder(t, choices);
  for (const NicChoice& c : choices) EXPECT_EQ(c.nic, nicNamed(t, "mlx5_0"));
  EXPECT_EQ(choices[gpuNamed(t, "cuda0")].path, PathClass::kPix);
  EXPECT_EQ(choices[gpuNamed(t, "0000:03:00.0")].path, PathClass::kSys);
}

TEST(NicChoice, EthernetOnlyMachinesUseEthernet) {
  Topology t = loadShipped("nccl/azure-ncv4-topo.xml");
  std::vector<NicChoice> choices = chooseNics(t);
  expectOnePerGpuInOrder(t, choices);
  for (const NicChoice& c : choices) EXPECT_EQ(c.nic, nicNamed(t, "eth0"));
  EXPECT_EQ(choices[0].path, PathClass::kPhb);
  EXPECT_EQ(choices[1].path, PathClass::kSys);
}

TEST(NicChoice, FallbacksWithoutNicsOrGpus) {
  Topology dgx = loadShipped("hwloc/hwloc-nvidiaDGX2.xml");  // no NICs in the file
  std::vector<NicChoice> choices = chooseNics(dgx);
  expectOnePerGpuInOrder(dgx, choices);
  for (const NicChoice& c : choices) EXPECT_EQ(c.nic, -1);
  EXPECT_TRUE(chooseNics(loadShipped("nccl/aws-g5.48xl-topo.xml")).empty());  // no GPUs
  EXPECT_TRUE(chooseNics(Topology{}).empty());
}

// GPU 0 has two equally close NICs (both PHB), GPU 1 only one (PIX, on its switch). Taken in GPU order,
// GPU 0 would grab that NIC and leave its other one idle while GPU 1 shares; the GPU with fewer close NICs
// chooses first.
TEST(NicChoice, GpusWithFewerCloseNicsChooseFirst) {
  Topology t;
  t.numa_nodes = {NumaNode{0, 0, 0}};
  t.anchors = {CpuAnchor{{0}, 0}};
  t.pci = {PciNode{PciKind::kHostBridge, "", 0, 0, 0, -1, 0}, PciNode{PciKind::kBridge, "sw0", 0, 0, 0, 0, 0},
           PciNode{PciKind::kBridge, "sw1", 0, 0, 0, 0, 0}};
  auto leaf = [&t](int parent) {
    t.pci.push_back(PciNode{PciKind::kDevice, "", 0, 0, 0, parent, 0});
    return static_cast<int>(t.pci.size()) - 1;
  };
  int gpu0 = leaf(0);  // directly on the host bridge: PHB to everything
  int gpu1 = leaf(1);
  int nic_a = leaf(1);  // on GPU 1's switch
  int nic_b = leaf(2);
  t.gpus = {Gpu{"g0", {}, gpu0, 0, {}}, Gpu{"g1", {}, gpu1, 0, {}}};
  t.nics = {Nic{"a", {}, NicKind::kFabric, nic_a, 0, 0}, Nic{"b", {}, NicKind::kFabric, nic_b, 0, 0}};
  std::vector<NicChoice> choices = chooseNics(t);
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0].nic, 1);
  EXPECT_EQ(choices[0].path, PathClass::kPhb);
  EXPECT_EQ(choices[1].nic, 0);
  EXPECT_EQ(choices[1].path, PathClass::kPix);
}

// GPUs whose closest NICs are all equally close are spread, never stacked on one while another idles.
TEST(NicChoice, EquallyCloseNicsAreSpread) {
  Topology t;
  t.numa_nodes = {NumaNode{0, 0, 0}};
  t.anchors = {CpuAnchor{{0}, 0}};
  t.pci = {PciNode{PciKind::kBridge, "sw", 0, 0, 0, -1, 0}};
  for (int i = 0; i < 7; ++i) t.pci.push_back(PciNode{PciKind::kDevice, "", 0, 0, 0, 0, 0});
  for (int g = 0; g < 4; ++g) t.gpus.push_back(Gpu{"g", {}, 1 + g, 0, {}});
  for (int n = 0; n < 3; ++n) t.nics.push_back(Nic{"n", {}, NicKind::kFabric, 5 + n, 0, 0});
  std::map<int, int> load = loadPerNic(chooseNics(t));
  ASSERT_EQ(load.size(), 3u);
  int most = 0;
  for (auto [nic, gpus] : load) most = std::max(most, gpus);
  EXPECT_EQ(most, 2);
}

}  // namespace
}  // namespace psdp::topo
