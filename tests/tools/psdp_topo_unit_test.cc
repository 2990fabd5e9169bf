// psdp-topo's parts: option parsing, the report gathered through the C API from the shipped topology files,
// and the three printers, checked for concrete content (the path-class matrix, the groups, the edges).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "topo_dot.h"
#include "topo_json.h"
#include "topo_options.h"
#include "topo_report.h"
#include "topo_text.h"

namespace psdp::tools {
namespace {

const std::string kDir = PSDP_TOPOLOGY_DIR;
const std::string kWholeIo = kDir + "/hwloc/hwloc-32em64t-2n8c2t-pci-wholeio.xml";
const std::string kNdv4 = kDir + "/nccl/azure-ndv4-topo.xml";

std::optional<TopoCommand> parse(std::vector<std::string> args, std::string* error) {
  return parseTopoCommand(args, error);
}

TopoReport mustBuild(const std::vector<std::string>& args) {
  std::string error;
  std::optional<TopoCommand> cmd = parse(args, &error);
  EXPECT_TRUE(cmd) << error;
  TopoReport report;
  bool usage = false;
  EXPECT_TRUE(cmd && buildTopoReport(*cmd, &report, &error, &usage)) << error;
  return report;
}

template <typename Print>
std::string render(const TopoReport& report, Print print) {
  std::ostringstream out;
  print(report, out);
  return out.str();
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

// The cell of the text matrix in row `row` and column `col` (both device names).
std::string matrixCell(const std::string& text, const std::string& row, const std::string& col) {
  std::istringstream in(text.substr(text.find("\npaths:\n") + 8));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header = words(line);
  while (std::getline(in, line) && !line.empty()) {
    std::vector<std::string> cells = words(line);
    if (cells.empty() || cells[0] != row) continue;
    for (size_t c = 0; c < header.size(); ++c) {
      if (header[c] == col && c + 1 < cells.size()) return cells[c + 1];
    }
  }
  return "";
}

TEST(TopoOptions, DefaultsAndValues) {
  std::string error;
  std::optional<TopoCommand> cmd = parse({}, &error);
  ASSERT_TRUE(cmd);
  EXPECT_TRUE(cmd->file.empty());
  EXPECT_EQ(cmd->hosts, 1);
  EXPECT_EQ(cmd->ranks_per_host, 0);
  EXPECT_EQ(cmd->group_size, 0);
  EXPECT_EQ(cmd->format, TopoFormat::kText);
  cmd = parse({"--file", "x.xml", "--hosts", "4", "--ranks-per-host", "8", "--group", "16", "--json"}, &error);
  ASSERT_TRUE(cmd) << error;
  EXPECT_EQ(cmd->file, "x.xml");
  EXPECT_EQ(cmd->hosts, 4);
  EXPECT_EQ(cmd->ranks_per_host, 8);
  EXPECT_EQ(cmd->group_size, 16);
  EXPECT_EQ(cmd->format, TopoFormat::kJson);
  EXPECT_EQ(parse({"--dot"}, &error)->format, TopoFormat::kDot);
  EXPECT_TRUE(parse({"--hosts", "x", "--help"}, &error) == std::nullopt);
  EXPECT_TRUE(parse({"--help", "--hosts", "x"}, &error)->help);
}

TEST(TopoOptions, BadOptionsAreNamed) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bogus", "1"}, "unknown option --bogus"},
      {{"--hosts"}, "--hosts needs a value"},
      {{"--hosts", "0"}, "bad value '0' for --hosts"},
      {{"--hosts", "-2"}, "bad value '-2' for --hosts"},
      {{"--ranks-per-host", "2x"}, "bad value '2x' for --ranks-per-host"},
      {{"--group", "99999999999"}, "bad value '99999999999' for --group"},
      {{"--file", ""}, "bad value '' for --file"},
      {{"--json", "--dot"}, "exclude each other"},
      {{"topo.xml"}, "unexpected argument topo.xml"},
  };
  for (const auto& [args, message] : cases) {
    std::string error;
    EXPECT_FALSE(parse(args, &error)) << message;
    EXPECT_NE(error.find(message), std::string::npos) << error;
  }
}

// Every shipped file but the NCCL graph loads, maps with the defaults, and prints in every format.
TEST(TopoReport, EveryShippedFile) {
  const char* files[] = {"hwloc/hwloc-32em64t-2n8c2t-pci-wholeio.xml",
                         "hwloc/hwloc-nvidiaDGX2.xml",
                         "hwloc/hwloc-power8gpudistances.xml",
                         "hwloc/mpibind-coral-lassen.xml",
                         "hwloc/mpibind-cts1-pascal.xml",
                         "hwloc/mpibind-eas-tioga.xml",
                         "nccl/aws-g5.48xl-topo.xml",
                         "nccl/aws-p4d-24xl-topo.xml",
                         "nccl/azure-ncv4-topo.xml",
                         "nccl/azure-ndv2-topo.xml",
                         "nccl/azure-ndv4-topo.xml"};
  for (const char* file : files) {
    SCOPED_TRACE(file);
    TopoReport r = mustBuild({"--file", kDir + "/" + file, "--hosts", "2"});
    EXPECT_EQ(r.devices.size(), static_cast<size_t>(r.gpus + r.nics));
    EXPECT_EQ(r.ranks_per_host, r.gpus > 0 ? r.gpus : 1);
    EXPECT_EQ(r.placements.size(), static_cast<size_t>(2 * r.ranks_per_host));
    const std::string text = render(r, printTopoText);
    EXPECT_NE(text.find("topology: " + kDir + "/" + file), std::string::npos);
    EXPECT_NE(text.find("replica groups"), std::string::npos);
    EXPECT_EQ(render(r, printTopoJson).front(), '{');
    EXPECT_EQ(render(r, printTopoDot).rfind("digraph topology {", 0), 0u);
  }
}

TEST(TopoReport, WholeIoShowsCuda0NextToMlx5) {
  TopoReport r = mustBuild({"--file", kWholeIo});
  const std::string text = render(r, printTopoText);
  EXPECT_EQ(matrixCell(text, "cuda0", "mlx5_0"), "PIX");
  EXPECT_EQ(matrixCell(text, "mlx5_0", "cuda0"), "PIX");
  EXPECT_EQ(matrixCell(text, "cuda0", "cuda0"), "LOC");
  EXPECT_EQ(matrixCell(text, "cuda0", "eth0"), "PHB");
  EXPECT_NE(text.find("hwloc-xml): 2 packages, 2 NUMA nodes, 16 cores"), std::string::npos) << text;
  EXPECT_NE(text.find("PIX   one PCIe switch"), std::string::npos);
  // The dot graph joins cuda0 to its closest NICs, mlx5_0 among them.
  const std::string dot = render(r, printTopoDot);
  EXPECT_NE(dot.find("\"GPU0\" -> \"NIC"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[label=\"PIX\"]"), std::string::npos);
  EXPECT_NE(dot.find("cluster_numa0"), std::string::npos);
}

TEST(TopoReport, Ndv4GroupsStayInsideHosts) {
  TopoReport r = mustBuild({"--file", kNdv4, "--hosts", "2"});
  EXPECT_EQ(r.gpus, 8);
  EXPECT_EQ(r.ranks_per_host, 8);
  EXPECT_EQ(r.group_size, 8);
  const std::vector<std::vector<int>> shards = shardGroups(r);
  ASSERT_EQ(shards.size(), 2u);
  for (const std::vector<int>& group : shards) {
    ASSERT_EQ(group.size(), 8u);
    for (int rank : group) EXPECT_EQ(r.placements[rank].host, r.placements[group[0]].host);
  }
  const std::vector<std::vector<int>> replicas = replicaGroups(r);
  ASSERT_EQ(replicas.size(), 8u);
  for (const std::vector<int>& group : replicas) {
    ASSERT_EQ(group.size(), 2u);
    EXPECT_NE(r.placements[group[0]].host, r.placements[group[1]].host);
  }
  std::set<std::string> nics;
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(r.placements[rank].nic_path, PSDP_PATH_PIX);
    nics.insert(r.placements[rank].nic);
  }
  EXPECT_EQ(nics.size(), 8u);  // one HDR port per GPU
  const std::string text = render(r, printTopoText);
  EXPECT_NE(text.find("nccl-xml): 0 packages, 4 NUMA nodes, 0 cores, 8 GPUs, 8 NICs"), std::string::npos) << text;
  EXPECT_NE(text.find("mapping: 2 hosts x 8 ranks per host = 16 ranks, shard groups of 8"), std::string::npos);
  const std::string json = render(r, printTopoJson);
  EXPECT_NE(json.find("\"gpus\":8"), std::string::npos);
  EXPECT_NE(json.find("\"shard_groups\":[["), std::string::npos);
  EXPECT_NE(json.find("\"nic_path\":\"PIX\""), std::string::npos);
}

TEST(TopoReport, CpuOnlyRanksWhenGpusRunOut) {
  TopoReport r = mustBuild({"--file", kNdv4, "--ranks-per-host", "16", "--group", "4"});
  for (const psdp_rank_placement_t& p : r.placements) EXPECT_STREQ(p.gpu_bus_id, "");
  EXPECT_NE(render(r, printTopoJson).find("\"gpu\":null"), std::string::npos);
}

TEST(TopoReport, LiveMachine) {
  // CTest clears PSDP_TOPO_FILE; run by hand with it set, the default is that file, not this machine.
  const char* file = std::getenv("PSDP_TOPO_FILE");
  if (file != nullptr && *file != '\0') GTEST_SKIP() << "PSDP_TOPO_FILE is set";
  TopoReport r = mustBuild({});
  EXPECT_EQ(r.format, "live");
  EXPECT_GE(r.numa_nodes, 1);
  EXPECT_EQ(r.placements.size(), static_cast<size_t>(r.ranks_per_host));
  const std::string text = render(r, printTopoText);
  EXPECT_NE(text.find("(live)"), std::string::npos);
  EXPECT_NE(text.find("shard groups"), std::string::npos);
}

TEST(TopoReport, ErrorsNameTheFileOrTheOption) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
    bool usage;
  };
  const std::vector<Case> cases = {
      {{"--file", kDir + "/nccl/azure-ncv4-graph.xml"}, "azure-ncv4-graph.xml", false},
      {{"--file", kDir + "/nccl/azure-ncv4-graph.xml"}, "graph", false},
      {{"--file", kDir + "/missing.xml"}, "missing.xml", false},
      {{"--file", kNdv4, "--group", "3"}, "--group 3 does not divide the 8 ranks", true},
      {{"--file", kNdv4, "--hosts", "65536", "--ranks-per-host", "65536"}, "over 1048576 ranks", true},
  };
  for (const Case& c : cases) {
    std::string error;
    std::optional<TopoCommand> cmd = parse(c.args, &error);
    ASSERT_TRUE(cmd) << error;
    TopoReport r;
    bool usage = !c.usage;
    EXPECT_FALSE(buildTopoReport(*cmd, &r, &error, &usage));
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
    EXPECT_EQ(usage, c.usage) << error;
  }
}

}  // namespace
}  // namespace psdp::tools
