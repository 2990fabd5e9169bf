// Format detection, every shipped file against its expected device counts, bad input, and discovery of the
// machine the tests run on.
#include "topo/topology_source.h"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "topo/nic_choice.h"
#include "unit/topo/topology_fixtures.h"

namespace psdp::topo {
namespace {

using testing::loadShipped;
using testing::topologyFile;

std::string readShipped(std::string_view relative) {
  std::ifstream in(topologyFile(relative));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// What tests/data/topologies/README.md (the MANIFEST) says each machine has.
struct ShippedFile {
  const char* file;
  TopologySource source;
  size_t packages;
  size_t numa_nodes;
  size_t gpus;
  size_t nics;
  int fabric_nics;
};

const ShippedFile kShipped[] = {
    {"hwloc/hwloc-nvidiaDGX2.xml", TopologySource::kHwlocXml, 2, 2, 16, 0, 0},
    {"hwloc/hwloc-power8gpudistances.xml", TopologySource::kHwlocXml, 2, 2, 4, 0, 0},
    // cuda0 (K40m), two NVIDIA GPUs without OS devices, an AMD GPU; eth0, eth1 and the ConnectX-4 (mlx5_0/ib0).
    {"hwloc/hwloc-32em64t-2n8c2t-pci-wholeio.xml", TopologySource::kHwlocXml, 2, 2, 4, 3, 1},
    // Four mlx5 ports (two per socket) plus two Broadcom Ethernet ports.
    {"hwloc/mpibind-coral-lassen.xml", TopologySource::kHwlocXml, 2, 2, 4, 6, 4},
    {"hwloc/mpibind-cts1-pascal.xml", TopologySource::kHwlocXml, 2, 2, 2, 3, 1},
    // Eight MI250X GCDs, four Slingshot NICs and one management Ethernet port.
    {"hwloc/mpibind-eas-tioga.xml", TopologySource::kHwlocXml, 1, 4, 8, 5, 4},
    {"nccl/azure-ndv2-topo.xml", TopologySource::kNcclXml, 0, 2, 8, 1, 1},
    {"nccl/azure-ndv4-topo.xml", TopologySource::kNcclXml, 0, 4, 8, 8, 8},
    {"nccl/azure-ncv4-topo.xml", TopologySource::kNcclXml, 0, 4, 4, 1, 0},
    {"nccl/aws-p4d-24xl-topo.xml", TopologySource::kNcclXml, 0, 2, 8, 4, 4},
    // A skeleton of nine bus ids without classes: NCCL fills them in from detection; nothing to classify.
    {"nccl/aws-g5.48xl-topo.xml", TopologySource::kNcclXml, 0, 2, 0, 0, 0},
};

class ShippedTopology : public ::testing::TestWithParam<ShippedFile> {};

TEST_P(ShippedTopology, FindsTheDevicesTheManifestDescribes) {
  const ShippedFile& expect = GetParam();
  Topology t = loadShipped(expect.file);
  EXPECT_EQ(t.source, expect.source);
  EXPECT_EQ(t.origin, topologyFile(expect.file));
  EXPECT_EQ(t.packages.size(), expect.packages);
  EXPECT_EQ(t.numa_nodes.size(), expect.numa_nodes);
  EXPECT_EQ(t.gpus.size(), expect.gpus);
  EXPECT_EQ(t.nics.size(), expect.nics);
  EXPECT_EQ(countNics(t, NicKind::kFabric), expect.fabric_nics);
}

// Every reference in the model points inside it, and every PCI chain ends at a root of its own tree.
TEST_P(ShippedTopology, ModelIsConsistent) {
  Topology t = loadShipped(GetParam().file);
  const int pci = static_cast<int>(t.pci.size());
  const int anchors = static_cast<int>(t.anchors.size());
  for (const PciNode& node : t.pci) {
    EXPECT_LT(node.parent, pci);
    ASSERT_GE(node.anchor, 0);
    EXPECT_LT(node.anchor, anchors);
    if (node.parent >= 0) {
      EXPECT_EQ(t.pci[node.parent].anchor, node.anchor);
    }
  }
  for (const Gpu& gpu : t.gpus) {
    ASSERT_GE(gpu.pci, 0);
    EXPECT_LT(gpu.pci, pci);
    EXPECT_EQ(t.pci[gpu.pci].anchor, gpu.anchor);
    EXPECT_FALSE(gpu.name.empty());
  }
  for (const Nic& nic : t.nics) {
    EXPECT_LT(nic.pci, pci);
    ASSERT_GE(nic.anchor, 0);
    EXPECT_LT(nic.anchor, anchors);
    EXPECT_FALSE(nic.name.empty());
  }
  for (const CpuAnchor& anchor : t.anchors) {
    for (int numa : anchor.numa) EXPECT_LT(numa, static_cast<int>(t.numa_nodes.size()));
  }
}

INSTANTIATE_TEST_SUITE_P(Files, ShippedTopology, ::testing::ValuesIn(kShipped),
                         [](const ::testing::TestParamInfo<ShippedFile>& info) {
                           std::string name = info.param.file;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(TopologyFormat, ToldByTheRootElementAfterAnyProlog) {
  EXPECT_EQ(
      detectTopologyFormat("<?xml version=\"1.0\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology>").value(),
      TopologyFormat::kHwlocXml);
  EXPECT_EQ(detectTopologyFormat("\xEF\xBB\xBF<!-- licence -->\n  <system version=\"1\">").value(),
            TopologyFormat::kNcclXml);
  EXPECT_EQ(detectTopologyFormat(readShipped("nccl/aws-p4d-24xl-topo.xml")).value(), TopologyFormat::kNcclXml);
  EXPECT_EQ(detectTopologyFormat(readShipped("hwloc/mpibind-cts1-pascal.xml")).value(), TopologyFormat::kHwlocXml);
}

TEST(TopologyFormat, UnknownRootIsNamed) {
  Result<TopologyFormat> other = detectTopologyFormat("<machine/>");
  ASSERT_FALSE(other.isOk());
  EXPECT_EQ(other.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(other.status().message().find("<machine>"), std::string::npos) << other.status().message();
}

TEST(TopologyFile, NcclGraphFileIsNotATopology) {
  Result<Topology> graph = loadTopologyFile(topologyFile("nccl/azure-ncv4-graph.xml"));
  ASSERT_FALSE(graph.isOk());
  EXPECT_EQ(graph.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(graph.status().message().find("graph"), std::string::npos) << graph.status().message();
  EXPECT_NE(graph.status().message().find("azure-ncv4-graph.xml"), std::string::npos);
}

TEST(TopologyFile, MissingFileIsASystemErrorNamingThePath) {
  Result<Topology> missing = loadTopologyFile(topologyFile("nccl/no-such-machine.xml"));
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), PSDP_ERR_SYSTEM);
  EXPECT_NE(missing.status().message().find("no-such-machine.xml"), std::string::npos) << missing.status().message();
}

TEST(TopologyFile, EmptyOrNonXmlTextIsRejected) {
  for (std::string_view text : {std::string_view(""), std::string_view("   \n"), std::string_view("gpu0 mlx5_0 PIX"),
                                std::string_view("<!-- only a comment -->")}) {
    Result<Topology> parsed = parseTopology(text, "inline");
    ASSERT_FALSE(parsed.isOk()) << text;
    EXPECT_EQ(parsed.status().code(), PSDP_ERR_INVALID_ARGUMENT) << text;
    EXPECT_NE(parsed.status().message().find("inline"), std::string::npos) << parsed.status().message();
  }
}

// Real files cut short at several points: each is an error, never a crash, a leak or a partial model.
TEST(TopologyFile, TruncatedFilesAreRejected) {
  for (const char* file : {"hwloc/mpibind-cts1-pascal.xml", "nccl/aws-p4d-24xl-topo.xml"}) {
    std::string text = readShipped(file);
    for (size_t cut : {text.size() / 4, text.size() / 2, text.size() - 12}) {
      Result<Topology> parsed = parseTopology(std::string_view(text).substr(0, cut), file);
      ASSERT_FALSE(parsed.isOk()) << file << " cut at " << cut;
      EXPECT_EQ(parsed.status().code(), PSDP_ERR_INVALID_ARGUMENT) << parsed.status().message();
      // libxml2 names the first error and its line, for hwloc documents too (topo/xml_document.h).
      EXPECT_NE(parsed.status().message().find("malformed XML"), std::string::npos) << parsed.status().message();
    }
  }
}

TEST(TopologyFile, HwlocRejectsABrokenDocument) {
  Result<Topology> parsed = parseTopology("<topology version=\"2.0\"><object type=\"Machine\"></topology>", "broken");
  ASSERT_FALSE(parsed.isOk());
  EXPECT_EQ(parsed.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(parsed.status().message().find("broken"), std::string::npos);
}

// Only UTF-8 (and ASCII) documents are read: other encodings go through iconv, where fuzzed declarations
// crashed libxml2.
TEST(TopologyFile, EncodingsOtherThanUtf8AreRefused) {
  const std::string body = "<system version=\"1\"/>\n";
  for (const char* declaration :
       {"<?xml version=\"1.0\" encoding=\"UTF-7\"?>\n", "<?xml version='1.0' encoding = 'ISO-8859-1'?>\n"}) {
    Result<Topology> parsed = parseTopology(declaration + body, "declared");
    ASSERT_FALSE(parsed.isOk()) << declaration;
    EXPECT_NE(parsed.status().message().find("declared: its XML declaration names encoding"), std::string::npos)
        << parsed.status().message();
  }
  Result<Topology> unquoted = parseTopology("<?xml version=\"1.0\" encoding=UTF-8?>\n" + body, "bad");
  ASSERT_FALSE(unquoted.isOk());
  EXPECT_NE(unquoted.status().message().find("malformed encoding"), std::string::npos) << unquoted.status().message();
  for (const char* declaration : {"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n", "<?xml version=\"1.0\"?>\n",
                                  "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"US-ASCII\"?>\n"}) {
    Result<Topology> parsed = parseTopology(declaration + body, "fine");
    if (!parsed.isOk()) {
      EXPECT_EQ(parsed.status().message().find("encoding"), std::string::npos) << parsed.status().message();
    }
  }
}

// hwloc's import of its old (version 1) format dereferences null sets on fuzzed input: only hwloc 2 exports
// are read.
TEST(TopologyFile, OnlyHwloc2ExportsAreRead) {
  for (const char* root : {"<topology>", "<topology versaon=\"2.0\">", "<topology version=\"1.11\">"}) {
    Result<Topology> parsed = parseTopology(std::string(root) + "<object type=\"Machine\"/></topology>", "old");
    ASSERT_FALSE(parsed.isOk()) << root;
    EXPECT_NE(parsed.status().message().find("old: not an hwloc 2 export"), std::string::npos)
        << parsed.status().message();
  }
}

// hwloc 2.9 asserts (aborting the process) on some malformed bitmaps: every set attribute must read as
// hwloc writes one.
TEST(TopologyFile, MalformedBitmapsAreRefusedBeforeHwloc) {
  for (const char* set : {",x00000002", "0x1,", "00000001", "0x", "0x123456789", "0xg", "0xf...fx"}) {
    const std::string text = std::string(
                                 "<topology version=\"2.0\">\n  <object type=\"Machine\" cpuset=\"0x1\" "
                                 "complete_cpuset=\"0x1\" nodeset=\"") +
                             set + "\" complete_nodeset=\"0x1\"/>\n</topology>\n";
    Result<Topology> parsed = parseTopology(text, "sets");
    ASSERT_FALSE(parsed.isOk()) << set;
    EXPECT_NE(parsed.status().message().find("sets:2: nodeset is not a bitmap as hwloc writes one"), std::string::npos)
        << parsed.status().message();
  }
}

// hwloc 2.9 crashes importing an object with a cpuset but no complete_cpuset (fixed upstream in
// open-mpi/hwloc#783); psdp refuses such a document before hwloc sees it, naming the line.
TEST(TopologyFile, AnObjectWithoutItsCompleteSetIsRefusedBeforeHwloc) {
  const std::string text =
      "<topology version=\"2.0\">\n"
      "  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\"\n"
      "          complete_nodeset=\"0x1\" gp_index=\"1\">\n"
      "    <object type=\"PU\" os_index=\"0\" cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\" "
      "gp_index=\"2\"/>\n"
      "  </object>\n"
      "</topology>\n";
  Result<Topology> parsed = parseTopology(text, "crafted");
  ASSERT_FALSE(parsed.isOk());
  EXPECT_EQ(parsed.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(parsed.status().message().find("crafted:4: an object has a cpuset but no complete_cpuset"),
            std::string::npos)
      << parsed.status().message();
}

// hwloc 2.9 dereferences null importing an object whose cpuset (or nodeset) has members its complete set
// lacks (found by fuzz_topology); hwloc's exports always write a superset, and psdp refuses others first.
TEST(TopologyFile, ASetOutsideItsCompleteSetIsRefusedBeforeHwloc) {
  for (auto [sets, words] :
       {std::pair{"cpuset=\"0x4\" complete_cpuset=\"0x3\" nodeset=\"0x1\" complete_nodeset=\"0x1\"",
                  "crafted:2: an object's cpuset has members its complete_cpuset lacks"},
        std::pair{"cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x3\" complete_nodeset=\"0x1\"",
                  "crafted:2: an object's nodeset has members its complete_nodeset lacks"}}) {
    const std::string text = std::string("<topology version=\"2.0\">\n  <object type=\"Machine\" os_index=\"0\" ") +
                             sets + " gp_index=\"1\"/>\n</topology>\n";
    Result<Topology> parsed = parseTopology(text, "crafted");
    ASSERT_FALSE(parsed.isOk()) << text;
    EXPECT_EQ(parsed.status().code(), PSDP_ERR_INVALID_ARGUMENT);
    EXPECT_NE(parsed.status().message().find(words), std::string::npos) << parsed.status().message();
  }
  // All ones from a word up ("0xf...f") includes every set, as in hwloc's own exports of a whole machine.
  const std::string whole =
      "<topology version=\"2.0\">\n  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000003\" "
      "complete_cpuset=\"0xf...f\" nodeset=\"0x1\" complete_nodeset=\"0xf...f\" gp_index=\"1\">\n"
      "    <object type=\"PU\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\" "
      "complete_nodeset=\"0x1\" gp_index=\"2\"/>\n"
      "    <object type=\"PU\" os_index=\"1\" cpuset=\"0x2\" complete_cpuset=\"0x2\" nodeset=\"0x1\" "
      "complete_nodeset=\"0x1\" gp_index=\"3\"/>\n  </object>\n</topology>\n";
  Result<Topology> parsed = parseTopology(whole, "whole");
  EXPECT_TRUE(parsed.isOk() || parsed.status().message().find("lacks") == std::string::npos)
      << parsed.status().message();
}

// The test machine has no GPU (and perhaps one NUMA node): discovery still succeeds and describes the CPUs,
// and NIC choice degrades to the CPU-only answer.
TEST(LiveMachine, DiscoversCpusAndDegradesWithoutGpus) {
  Result<Topology> live = discoverMachine();
  ASSERT_TRUE(live.isOk()) << live.status().toString();
  const Topology& t = live.value();
  EXPECT_EQ(t.source, TopologySource::kLiveMachine);
  EXPECT_GE(t.numa_nodes.size(), 1u);
  EXPECT_GE(t.cores.size(), 1u);
  for (const Core& core : t.cores) EXPECT_GE(core.pus, 1);
  std::vector<NicChoice> choices = chooseNics(t);
  EXPECT_EQ(choices.size(), t.gpus.size());
  for (size_t i = 0; i < t.nics.size(); ++i) {
    EXPECT_EQ(classifyPath(t, DeviceRef::nic(static_cast<int>(i)), DeviceRef::nic(static_cast<int>(i))),
              PathClass::kLoc);
  }
}

}  // namespace
}  // namespace psdp::topo
