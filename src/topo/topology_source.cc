#include "topo/topology_source.h"

#include <cerrno>
#include <fstream>
#include <iterator>
#include <sstream>

#include "base/log.h"
#include "topo/hwloc_source.h"
#include "topo/nccl_xml_source.h"

namespace psdp::topo {
namespace {

// One debug line per model, so a log shows what the mapper was given.
Result<Topology> logged(Result<Topology> topology) {
  if (topology.isOk()) {
    const Topology& t = topology.value();
    processLog().debug("topology {}: {} packages, {} numa nodes, {} cores, {} gpus, {} nics ({} fabric)", t.origin,
                       t.packages.size(), t.numa_nodes.size(), t.cores.size(), t.gpus.size(), t.nics.size(),
                       countNics(t, NicKind::kFabric));
  }
  return topology;
}

// Skips what may precede the root element: whitespace, a byte-order mark, the XML declaration and other
// processing instructions, comments (NCCL's cloud files open with a licence comment) and a DOCTYPE.
size_t skipProlog(std::string_view text) {
  size_t at = 0;
  if (text.starts_with("\xEF\xBB\xBF")) at = 3;
  while (at < text.size()) {
    at = text.find_first_not_of(" \t\r\n", at);
    if (at == std::string_view::npos) return text.size();
    std::string_view rest = text.substr(at);
    std::string_view close;
    if (rest.starts_with("<?")) {
      close = "?>";
    } else if (rest.starts_with("<!--")) {
      close = "-->";
    } else if (rest.starts_with("<!")) {
      close = ">";
    } else {
      return at;
    }
    size_t end = text.find(close, at + 2);
    if (end == std::string_view::npos) return text.size();
    at = end + close.size();
  }
  return at;
}

}  // namespace

Result<TopologyFormat> detectTopologyFormat(std::string_view text) {
  size_t at = skipProlog(text);
  if (at >= text.size() || text[at] != '<') return Status::invalidArgument("not an XML document (no root element)");
  size_t end = text.find_first_of(" \t\r\n/>", at + 1);
  std::string_view root = text.substr(at + 1, end == std::string_view::npos ? std::string_view::npos : end - at - 1);
  if (root == "topology") return TopologyFormat::kHwlocXml;
  if (root == "system") return TopologyFormat::kNcclXml;
  if (root == "graphs") {
    return Status::invalidArgument("an NCCL graph file (<graphs>), not a topology: NCCL_TOPO_FILE has <system>");
  }
  return Status::invalidArgument(
      "unknown topology format: root element <{}>, expected <topology> (hwloc) or "
      "<system> (NCCL)",
      root);
}

Result<Topology> parseTopology(std::string_view text, std::string origin) {
  Result<TopologyFormat> format = detectTopologyFormat(text);
  if (!format.isOk()) return format.status().withContext(origin);
  if (format.value() == TopologyFormat::kHwlocXml) return logged(readHwlocXml(text, std::move(origin)));
  return logged(readNcclXml(text, std::move(origin)));
}

Result<Topology> loadTopologyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::fromErrno(errno, "cannot open topology file " + path);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return Status::fromErrno(errno, "cannot read topology file " + path);
  return parseTopology(contents.str(), path);
}

Result<Topology> discoverMachine() {
  return logged(discoverWithHwloc());
}

}  // namespace psdp::topo
