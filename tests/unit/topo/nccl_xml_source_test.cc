// NCCL topology files: the cloud machines' layouts, NVLink tags, and the errors for documents that are XML
// but not usable topologies.
#include "topo/nccl_xml_source.h"

#include <gtest/gtest.h>

#include "unit/topo/topology_fixtures.h"

namespace psdp::topo {
namespace {

using testing::gpuNamed;
using testing::loadShipped;
using testing::nicNamed;

TEST(NcclXmlSource, SwitchesGpusAndEfaOfP4d) {
  Topology t = loadShipped("nccl/aws-p4d-24xl-topo.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 4u);
  const PciNode& gpu0 = t.pci[t.gpus[gpuNamed(t, "0000:10:1c.0")].pci];
  EXPECT_EQ(gpu0.class_id, 0x0302u);  // NCCL's 24-bit 0x030200, as hwloc's 16-bit class
  EXPECT_EQ(gpu0.vendor_id, 0x10de);
  EXPECT_EQ(gpu0.device_id, 0x20b0);
  ASSERT_GE(gpu0.parent, 0);
  EXPECT_EQ(t.pci[gpu0.parent].bus_id, "ffff:ff:01.0");
  EXPECT_EQ(t.pci[gpu0.parent].kind, PciKind::kBridge);
  const Nic& efa = t.nics[nicNamed(t, "0000:10:1b.0")];
  EXPECT_EQ(efa.kind, NicKind::kFabric);
  ASSERT_GE(efa.pci, 0);
  EXPECT_EQ(t.pci[efa.pci].parent, gpu0.parent);  // the EFA shares GPU 0's switch
  EXPECT_EQ(t.numa_nodes[t.anchors[efa.anchor].numa[0]].os_index, 0);
}

TEST(NcclXmlSource, BareClassesOfNdv4) {
  Topology t = loadShipped("nccl/azure-ndv4-topo.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 8u);
  for (const Nic& nic : t.nics) EXPECT_EQ(nic.kind, NicKind::kFabric);  // class 0x0207: InfiniBand HDR
  // The file lists GPUs by NUMA node in scrambled bus order: 0003 and 0004 sit on NUMA 0.
  EXPECT_EQ(t.numa_nodes[t.anchors[t.gpus[gpuNamed(t, "0003:00:00.0")].anchor].numa[0]].os_index, 0);
  EXPECT_EQ(t.numa_nodes[t.anchors[t.gpus[gpuNamed(t, "0001:00:00.0")].anchor].numa[0]].os_index, 1);
}

TEST(NcclXmlSource, GpuElementsNicWithoutPciAndSelfLinks) {
  Topology t = loadShipped("nccl/azure-ncv4-topo.xml");
  ASSERT_EQ(t.gpus.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const Gpu& gpu = t.gpus[i];
    EXPECT_EQ(gpu.name, "cuda" + std::to_string(i));
    // Each A100's only nvlink tag names its own bus id: no peers.
    EXPECT_TRUE(gpu.nvlink_peers.empty()) << gpu.name;
  }
  ASSERT_EQ(t.nics.size(), 1u);
  const Nic& eth0 = t.nics[0];
  EXPECT_EQ(eth0.name, "eth0");
  EXPECT_EQ(eth0.pci, -1);
  EXPECT_EQ(eth0.kind, NicKind::kEthernet);  // gdr="0"
  EXPECT_EQ(eth0.speed_mbps, 100000u);
  EXPECT_EQ(t.numa_nodes[t.anchors[eth0.anchor].numa[0]].os_index, 0);
}

TEST(NcclXmlSource, SkeletonWithoutClassesKeepsTheBusIds) {
  Topology t = loadShipped("nccl/aws-g5.48xl-topo.xml");
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_TRUE(t.nics.empty());
  ASSERT_EQ(t.pci.size(), 9u);
  for (const PciNode& node : t.pci) {
    EXPECT_EQ(node.kind, PciKind::kDevice);
    EXPECT_EQ(node.class_id, 0u);
  }
}

constexpr const char* kLinkedGpus = R"(<system version="1">
  <cpu numaid="0">
    <pci busid="0000:07:00.0" class="0x030200" vendor="0x10de">
      <gpu dev="0"><nvlink target="0000:0F:00.0" count="4" tclass="0x030200"/></gpu>
    </pci>
    <pci busid="0000:0f:00.0" class="0x030200" vendor="0x10de"><gpu dev="1"/></pci>
    <pci busid="0000:47:00.0" class="0x030200" vendor="0x10de">
      <gpu dev="2"><nvlink target="fffffff:ffff:00.0" count="12" tclass="0x068000"/></gpu>
    </pci>
    <pci busid="0000:4e:00.0" class="0x030200" vendor="0x10de">
      <gpu dev="3"><nvlink target="fffffff:ffff:00.0" count="12" tclass="0x068000"/></gpu>
    </pci>
    <pci busid="0000:0c:00.0" class="0x020700" vendor="0x15b3">
      <nic><net name="mlx5_0" dev="0" speed="200000" gdr="1"/><net name="mlx5_1" dev="1" speed="200000" gdr="1"/></nic>
    </pci>
  </cpu>
</system>)";

TEST(NcclXmlSource, NvlinkDirectAndThroughASharedSwitch) {
  Result<Topology> parsed = readNcclXml(kLinkedGpus, "inline");
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  const Topology& t = parsed.value();
  ASSERT_EQ(t.gpus.size(), 4u);
  EXPECT_EQ(t.gpus[0].nvlink_peers, std::vector<int>{1});  // bus ids compare case-insensitively
  EXPECT_EQ(t.gpus[1].nvlink_peers, std::vector<int>{0});  // a link counts from either end
  EXPECT_EQ(t.gpus[2].nvlink_peers, std::vector<int>{3});
  EXPECT_EQ(t.gpus[3].nvlink_peers, std::vector<int>{2});
  // One NIC per <net> port of the function.
  ASSERT_EQ(t.nics.size(), 2u);
  EXPECT_EQ(t.nics[0].name, "mlx5_0");
  EXPECT_EQ(t.nics[1].name, "mlx5_1");
  EXPECT_EQ(t.nics[0].pci, t.nics[1].pci);
  EXPECT_EQ(t.nics[1].speed_mbps, 200000u);
}

struct BadDocument {
  const char* name;
  const char* text;
  const char* expect;  // a piece of the message
};

const BadDocument kBadDocuments[] = {
    {"malformed", "<system version=\"1\">\n  <cpu numaid=\"0\">\n    <pci busid=\"0000:01:00.0\">\n  </cpu>\n</system>",
     "inline:4: malformed XML"},
    {"no_cpu", "<system version=\"1\"></system>", "no <cpu>"},
    {"cpu_without_numaid", "<system version=\"1\">\n<cpu affinity=\"ff\"/></system>",
     "inline:2: <cpu> needs a numeric numaid"},
    {"non_numeric_numaid", "<system version=\"1\"><cpu numaid=\"zero\"/></system>", "numaid"},
    {"pci_without_busid", "<system version=\"1\"><cpu numaid=\"0\"><pci class=\"0x030200\"/></cpu></system>",
     "<pci> without busid"},
    {"wrong_root", "<graphs version=\"1\"/>", "root element is not <system>"},
    {"external_entity",
     "<!DOCTYPE system [<!ENTITY x SYSTEM \"http://example.invalid/x\">]><system version=\"1\">&x;</system>",
     "no <cpu>"},
};

class NcclBadDocument : public ::testing::TestWithParam<BadDocument> {};

TEST_P(NcclBadDocument, IsAnInvalidArgumentThatSaysWhy) {
  Result<Topology> parsed = readNcclXml(GetParam().text, "inline");
  ASSERT_FALSE(parsed.isOk());
  EXPECT_EQ(parsed.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(parsed.status().message().find(GetParam().expect), std::string::npos) << parsed.status().message();
}

INSTANTIATE_TEST_SUITE_P(Documents, NcclBadDocument, ::testing::ValuesIn(kBadDocuments),
                         [](const ::testing::TestParamInfo<BadDocument>& info) { return info.param.name; });

}  // namespace
}  // namespace psdp::topo
