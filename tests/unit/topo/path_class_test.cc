// Path classes on the real machines, against what the MANIFEST and the vendors' own `nvidia-smi topo -m`
// say, plus the rules on hand-built trees where the files have no example.
#include "topo/path_class.h"

#include <gtest/gtest.h>

#include "unit/topo/topology_fixtures.h"

namespace psdp::topo {
namespace {

using testing::gpuToGpu;
using testing::gpuToNic;
using testing::loadShipped;

TEST(PathClass, WholeIoXeon) {
  Topology t = loadShipped("hwloc/hwloc-32em64t-2n8c2t-pci-wholeio.xml");
  EXPECT_EQ(gpuToNic(t, "cuda0", "mlx5_0"), PathClass::kPix);  // one root port
  EXPECT_EQ(gpuToNic(t, "cuda0", "ib0"), PathClass::kPix);
  EXPECT_EQ(gpuToGpu(t, "cuda0", "0000:84:00.1"), PathClass::kPix);
  EXPECT_EQ(gpuToGpu(t, "cuda0", "0000:83:00.0"), PathClass::kPhb);  // another root port, same socket
  EXPECT_EQ(gpuToNic(t, "cuda0", "eth0"), PathClass::kPhb);
  EXPECT_EQ(gpuToGpu(t, "cuda0", "0000:03:00.0"), PathClass::kSys);  // the other socket
  EXPECT_EQ(gpuToNic(t, "0000:03:00.0", "mlx5_0"), PathClass::kSys);
}

TEST(PathClass, LassenPowerNine) {
  Topology t = loadShipped("hwloc/mpibind-coral-lassen.xml");
  // Each GPU-NIC pair of a socket crosses the CPU: separate host bridges of one POWER9 count as PHB, as in
  // NCCL.
  EXPECT_EQ(gpuToNic(t, "cuda0", "mlx5_0"), PathClass::kPhb);
  EXPECT_EQ(gpuToNic(t, "cuda1", "mlx5_1"), PathClass::kPhb);
  EXPECT_EQ(gpuToNic(t, "cuda2", "mlx5_2"), PathClass::kPhb);
  EXPECT_EQ(gpuToNic(t, "cuda3", "mlx5_3"), PathClass::kPhb);
  EXPECT_EQ(gpuToNic(t, "cuda0", "mlx5_2"), PathClass::kSys);
  EXPECT_EQ(gpuToGpu(t, "cuda0", "cuda1"), PathClass::kPix);  // two downstream ports of one PLX switch
  EXPECT_EQ(gpuToGpu(t, "cuda0", "cuda2"), PathClass::kSys);
}

TEST(PathClass, PascalGpusAndConnectXShareOneSwitch) {
  Topology t = loadShipped("hwloc/mpibind-cts1-pascal.xml");
  EXPECT_EQ(gpuToGpu(t, "cuda0", "cuda1"), PathClass::kPix);
  EXPECT_EQ(gpuToNic(t, "cuda0", "mlx5_0"), PathClass::kPix);
  EXPECT_EQ(gpuToNic(t, "cuda1", "mlx5_0"), PathClass::kPix);
  EXPECT_EQ(gpuToNic(t, "cuda0", "enp12s0f0"), PathClass::kPhb);
}

TEST(PathClass, NvlinkFromHwlocDistances) {
  Topology dgx = loadShipped("hwloc/hwloc-nvidiaDGX2.xml");
  EXPECT_EQ(gpuToGpu(dgx, "nvml0", "nvml7"), PathClass::kNvl);
  EXPECT_EQ(gpuToGpu(dgx, "nvml8", "nvml15"), PathClass::kNvl);
  EXPECT_EQ(gpuToGpu(dgx, "nvml0", "nvml8"), PathClass::kSys);
  Topology minsky = loadShipped("hwloc/hwloc-power8gpudistances.xml");
  EXPECT_EQ(gpuToGpu(minsky, "cuda0", "cuda1"), PathClass::kNvl);
  EXPECT_EQ(gpuToGpu(minsky, "cuda2", "cuda3"), PathClass::kNvl);
  EXPECT_EQ(gpuToGpu(minsky, "cuda0", "cuda2"), PathClass::kSys);
}

TEST(PathClass, TiogaGroupsInsideOneNumaNode) {
  Topology t = loadShipped("hwloc/mpibind-eas-tioga.xml");
  // rsmi5 and hsi2 hang off the same CPU object; rsmi4 hangs off another object of the same NUMA node.
  EXPECT_EQ(gpuToNic(t, "rsmi5", "hsi2"), PathClass::kPhb);
  EXPECT_EQ(gpuToNic(t, "rsmi4", "hsi2"), PathClass::kNode);
  EXPECT_EQ(gpuToGpu(t, "rsmi4", "rsmi5"), PathClass::kNode);
  EXPECT_EQ(gpuToNic(t, "rsmi4", "hsi0"), PathClass::kSys);
}

TEST(PathClass, CloudNcclFiles) {
  Topology ndv4 = loadShipped("nccl/azure-ndv4-topo.xml");
  // Two A100 and two HDR ports behind each virtual switch.
  EXPECT_EQ(gpuToGpu(ndv4, "0003:00:00.0", "0004:00:00.0"), PathClass::kPix);
  EXPECT_EQ(gpuToNic(ndv4, "0003:00:00.0", "0103:00:00.0"), PathClass::kPix);
  EXPECT_EQ(gpuToNic(ndv4, "0004:00:00.0", "0104:00:00.0"), PathClass::kPix);
  EXPECT_EQ(gpuToNic(ndv4, "0003:00:00.0", "0101:00:00.0"), PathClass::kSys);

  Topology p4d = loadShipped("nccl/aws-p4d-24xl-topo.xml");
  EXPECT_EQ(gpuToNic(p4d, "0000:10:1c.0", "0000:10:1b.0"), PathClass::kPix);
  EXPECT_EQ(gpuToNic(p4d, "0000:10:1d.0", "0000:10:1b.0"), PathClass::kPix);
  EXPECT_EQ(gpuToNic(p4d, "0000:10:1c.0", "0000:20:1b.0"), PathClass::kPhb);  // other switch, same CPU
  EXPECT_EQ(gpuToNic(p4d, "0000:10:1c.0", "0000:90:1b.0"), PathClass::kSys);

  Topology ndv2 = loadShipped("nccl/azure-ndv2-topo.xml");
  EXPECT_EQ(gpuToNic(ndv2, "0001:00:00.0", "0101:00:00.0"), PathClass::kPhb);
  EXPECT_EQ(gpuToNic(ndv2, "0005:00:00.0", "0101:00:00.0"), PathClass::kSys);

  Topology ncv4 = loadShipped("nccl/azure-ncv4-topo.xml");
  EXPECT_EQ(gpuToNic(ncv4, "cuda0", "eth0"), PathClass::kPhb);  // a NIC without PCI hangs off its CPU
  EXPECT_EQ(gpuToNic(ncv4, "cuda1", "eth0"), PathClass::kSys);
  EXPECT_EQ(gpuToGpu(ncv4, "cuda0", "cuda1"), PathClass::kSys);
}

TEST(PathClass, SymmetricAndLocalOnEveryFile) {
  for (const char* file : {"hwloc/hwloc-nvidiaDGX2.xml", "hwloc/hwloc-power8gpudistances.xml",
                           "hwloc/hwloc-32em64t-2n8c2t-pci-wholeio.xml", "hwloc/mpibind-coral-lassen.xml",
                           "hwloc/mpibind-cts1-pascal.xml", "hwloc/mpibind-eas-tioga.xml", "nccl/azure-ndv2-topo.xml",
                           "nccl/azure-ndv4-topo.xml", "nccl/azure-ncv4-topo.xml", "nccl/aws-p4d-24xl-topo.xml"}) {
    Topology t = loadShipped(file);
    std::vector<DeviceRef> devices;
    for (int g = 0; g < static_cast<int>(t.gpus.size()); ++g) devices.push_back(DeviceRef::gpu(g));
    for (int n = 0; n < static_cast<int>(t.nics.size()); ++n) devices.push_back(DeviceRef::nic(n));
    for (size_t i = 0; i < devices.size(); ++i) {
      for (size_t j = 0; j < devices.size(); ++j) {
        PathClass ab = classifyPath(t, devices[i], devices[j]);
        EXPECT_EQ(ab, classifyPath(t, devices[j], devices[i])) << file << " " << i << " " << j;
        EXPECT_EQ(ab == PathClass::kLoc, i == j) << file << " " << i << " " << j;
      }
    }
  }
}

// A hand-built tree for the switch rules: host bridge -> root port -> switch (upstream port) -> two
// downstream ports, one with a GPU and one with a second switch holding a NIC; a second root port holds a GPU.
Topology handBuiltTree() {
  Topology t;
  t.numa_nodes = {NumaNode{0, 0, 0}, NumaNode{1, 0, 0}};
  t.anchors = {CpuAnchor{{0}, 0}, CpuAnchor{{0}, 0}, CpuAnchor{{1}, 0}};
  auto add = [&t](PciKind kind, int parent, int anchor) {
    t.pci.push_back(PciNode{kind, "", 0, 0, 0, parent, anchor});
    return static_cast<int>(t.pci.size()) - 1;
  };
  int host = add(PciKind::kHostBridge, -1, 0);
  int root = add(PciKind::kBridge, host, 0);
  int usp = add(PciKind::kBridge, root, 0);
  int dsp_a = add(PciKind::kBridge, usp, 0);
  int dsp_b = add(PciKind::kBridge, usp, 0);
  int gpu_a = add(PciKind::kDevice, dsp_a, 0);
  int usp2 = add(PciKind::kBridge, dsp_b, 0);
  int dsp2 = add(PciKind::kBridge, usp2, 0);
  int nic_deep = add(PciKind::kDevice, dsp2, 0);
  int dsp_c = add(PciKind::kBridge, usp, 0);
  int gpu_c = add(PciKind::kDevice, dsp_c, 0);
  int root2 = add(PciKind::kBridge, host, 0);
  int gpu_d = add(PciKind::kDevice, root2, 0);
  int host_other = add(PciKind::kHostBridge, -1, 1);
  int gpu_node = add(PciKind::kDevice, host_other, 1);
  int host_far = add(PciKind::kHostBridge, -1, 2);
  int nic_far = add(PciKind::kDevice, host_far, 2);
  for (int pci : {gpu_a, gpu_c, gpu_d, gpu_node}) t.gpus.push_back(Gpu{"g", {}, pci, t.pci[pci].anchor, {}});
  for (int pci : {nic_deep, nic_far}) t.nics.push_back(Nic{"n", {}, NicKind::kFabric, pci, t.pci[pci].anchor, 0});
  t.nics.push_back(Nic{"virtual", {}, NicKind::kEthernet, -1, 0, 0});
  return t;
}

TEST(PathClass, SwitchRulesOnAHandBuiltTree) {
  Topology t = handBuiltTree();
  auto gpu = DeviceRef::gpu;
  auto nic = DeviceRef::nic;
  EXPECT_EQ(classifyPath(t, gpu(0), gpu(1)), PathClass::kPix);   // two downstream ports of one switch
  EXPECT_EQ(classifyPath(t, gpu(0), nic(0)), PathClass::kPxb);   // through a second switch
  EXPECT_EQ(classifyPath(t, gpu(0), gpu(2)), PathClass::kPhb);   // different root ports, one host bridge
  EXPECT_EQ(classifyPath(t, gpu(0), gpu(3)), PathClass::kNode);  // another host bridge, another CPU object
  EXPECT_EQ(classifyPath(t, gpu(0), nic(1)), PathClass::kSys);
  EXPECT_EQ(classifyPath(t, gpu(0), nic(2)), PathClass::kPhb);  // no PCI function: its anchor decides
  t.gpus[0].nvlink_peers = {3};
  t.gpus[3].nvlink_peers = {0};
  EXPECT_EQ(classifyPath(t, gpu(0), gpu(3)), PathClass::kNvl);
}

TEST(PathClass, Names) {
  EXPECT_STREQ(pathClassName(PathClass::kNvl), "NVL");
  EXPECT_STREQ(pathClassName(PathClass::kPxb), "PXB");
  EXPECT_STREQ(pathClassName(PathClass::kNode), "NODE");
  EXPECT_STREQ(pathClassName(PathClass::kSys), "SYS");
}

}  // namespace
}  // namespace psdp::topo
