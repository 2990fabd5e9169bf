// NCCL's format read from libxml2's tree (topo/xml_document.h).
#include "topo/nccl_xml_source.h"

#include <libxml/tree.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/raii.h"
#include "topo/xml_document.h"

namespace psdp::topo {
namespace {

constexpr uint16_t kVendorNvidia = 0x10de;
constexpr uint32_t kClassNvswitch = 0x0680;
constexpr uint32_t kClassPciBridge = 0x0604;

bool isElement(const xmlNode* node, std::string_view name) {
  return node->type == XML_ELEMENT_NODE && name == reinterpret_cast<const char*>(node->name);
}

// An attribute's text without copying it (libxml2 keeps a plain attribute value as one text child), or "".
std::string_view attribute(const xmlNode* node, std::string_view name) {
  for (const xmlAttr* a = node->properties; a != nullptr; a = a->next) {
    if (name != reinterpret_cast<const char*>(a->name)) continue;
    if (a->children == nullptr || a->children->content == nullptr) return {};
    return reinterpret_cast<const char*>(a->children->content);
  }
  return {};
}

// "0x030200" or "10" as an unsigned number; false on anything else (empty, signs, trailing text).
bool parseNumber(std::string_view text, uint64_t& value) {
  int base = 10;
  if (text.starts_with("0x") || text.starts_with("0X")) {
    text.remove_prefix(2);
    base = 16;
  }
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  return ec == std::errc() && end == text.data() + text.size();
}

uint64_t numberOr(std::string_view text, uint64_t fallback) {
  uint64_t value = 0;
  return parseNumber(text, value) ? value : fallback;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

class NcclImporter {
 public:
  NcclImporter(std::string origin, Topology& out) : origin_(std::move(origin)), out_(out) {}

  Status run(const xmlNode* system) {
    for (const xmlNode* c = system->children; c != nullptr; c = c->next) {
      if (isElement(c, "cpu")) PSDP_RETURN_IF_ERROR(addCpu(c));
    }
    if (out_.anchors.empty()) return error(system, "<system> has no <cpu> element");
    resolveNvlinks();
    return Status::ok();
  }

 private:
  template <typename... Args>
  Status error(const xmlNode* node, fmt::format_string<Args...> format, Args&&... args) const {
    return Status::invalidArgument("{}:{}: {}", origin_, node->line, fmt::format(format, std::forward<Args>(args)...));
  }

  Status addCpu(const xmlNode* cpu) {
    uint64_t numaid = 0;
    if (!parseNumber(attribute(cpu, "numaid"), numaid) || numaid > INT_MAX) {
      return error(cpu, "<cpu> needs a numeric numaid");
    }
    out_.numa_nodes.push_back(NumaNode{static_cast<int>(numaid), -1, 0});
    out_.anchors.push_back(CpuAnchor{{static_cast<int>(out_.numa_nodes.size()) - 1}, -1});
    int anchor = static_cast<int>(out_.anchors.size()) - 1;
    for (const xmlNode* c = cpu->children; c != nullptr; c = c->next) {
      if (isElement(c, "pci")) PSDP_RETURN_IF_ERROR(addPci(c, -1, anchor));
      if (isElement(c, "nic")) addNics(c, -1, anchor, NicKind::kEthernet);
    }
    return Status::ok();
  }

  Status addPci(const xmlNode* node, int parent, int anchor) {
    std::string_view busid = attribute(node, "busid");
    if (busid.empty()) return error(node, "<pci> without busid");
    PciNode pci;
    pci.bus_id = lowercase(busid);
    pci.class_id = static_cast<uint32_t>(numberOr(attribute(node, "class"), 0) >> 8);
    pci.vendor_id = static_cast<uint16_t>(numberOr(attribute(node, "vendor"), 0));
    pci.device_id = static_cast<uint16_t>(numberOr(attribute(node, "device"), 0));
    pci.parent = parent;
    pci.anchor = anchor;
    bool has_pci_children = false;
    for (const xmlNode* c = node->children; c != nullptr; c = c->next) has_pci_children |= isElement(c, "pci");
    // An NVSwitch (bridge class 0x0680) is a device here: links pass through it, PCIe paths do not.
    pci.kind = has_pci_children || pci.class_id == kClassPciBridge ? PciKind::kBridge : PciKind::kDevice;
    out_.pci.push_back(std::move(pci));
    int self = static_cast<int>(out_.pci.size()) - 1;
    if (has_pci_children) {
      for (const xmlNode* c = node->children; c != nullptr; c = c->next) {
        if (isElement(c, "pci")) PSDP_RETURN_IF_ERROR(addPci(c, self, anchor));
      }
      return Status::ok();
    }
    classifyFunction(node, self, anchor);
    return Status::ok();
  }

  void classifyFunction(const xmlNode* node, int pci, int anchor) {
    const xmlNode* gpu = nullptr;
    const xmlNode* nic = nullptr;
    for (const xmlNode* c = node->children; c != nullptr; c = c->next) {
      if (isElement(c, "gpu")) gpu = c;
      if (isElement(c, "nic")) nic = c;
    }
    const PciNode& f = out_.pci[pci];
    // Azure's files leave the vendor out: NCCL describes NVIDIA GPUs only.
    uint16_t vendor = f.vendor_id != 0 ? f.vendor_id : kVendorNvidia;
    if (gpu != nullptr || isGpuFunction(f.class_id, vendor)) {
      addGpu(gpu, pci, anchor);
    } else if ((f.class_id >> 8) == 0x02 || nic != nullptr) {
      NicKind kind = isFabricFunction(f.class_id, f.vendor_id) ? NicKind::kFabric : NicKind::kEthernet;
      if (nic == nullptr || !addNics(nic, pci, anchor, kind)) {
        out_.nics.push_back(Nic{f.bus_id, {}, kind, pci, anchor, 0});
      }
    }
  }

  void addGpu(const xmlNode* gpu, int pci, int anchor) {
    Gpu g;
    g.pci = pci;
    g.anchor = anchor;
    g.name = out_.pci[pci].bus_id;
    std::vector<std::string> links;
    if (gpu != nullptr) {
      std::string_view dev = attribute(gpu, "dev");
      if (!dev.empty()) {
        g.name = "cuda" + std::string(dev);
        g.os_names.push_back(g.name);
      }
      for (const xmlNode* c = gpu->children; c != nullptr; c = c->next) {
        if (!isElement(c, "nvlink")) continue;
        uint32_t tclass = static_cast<uint32_t>(numberOr(attribute(c, "tclass"), 0) >> 8);
        std::string target = lowercase(attribute(c, "target"));
        // A link to the GPU's own bus id (Azure NC A100 v4) says nothing about peers.
        if (target.empty() || target == out_.pci[pci].bus_id) continue;
        if (tclass == kClassNvswitch) target.insert(0, "switch:");
        links.push_back(std::move(target));
      }
    }
    out_.gpus.push_back(std::move(g));
    nvlink_targets_.push_back(std::move(links));
  }

  // One NIC per <net> under `nic`; false if there is none.
  bool addNics(const xmlNode* nic, int pci, int anchor, NicKind kind) {
    bool any = false;
    for (const xmlNode* c = nic->children; c != nullptr; c = c->next) {
      if (!isElement(c, "net")) continue;
      std::string name(attribute(c, "name"));
      if (name.empty()) name = pci >= 0 ? out_.pci[pci].bus_id : "net" + std::string(attribute(c, "dev"));
      // NCCL marks a port usable for GPUDirect RDMA with gdr="1": a fabric port whatever its PCI identity.
      NicKind net_kind = attribute(c, "gdr") == "1" ? NicKind::kFabric : kind;
      out_.nics.push_back(Nic{name, {name}, net_kind, pci, anchor, numberOr(attribute(c, "speed"), 0)});
      any = true;
    }
    return any;
  }

  // GPU i and j are peers when one links to the other's bus id or both link to the same NVSwitch.
  void resolveNvlinks() {
    const size_t n = out_.gpus.size();
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) {
        if (i != j && linked(i, j)) out_.gpus[i].nvlink_peers.push_back(static_cast<int>(j));
      }
    }
  }
  bool linked(size_t i, size_t j) const {
    const std::string& bus_j = out_.pci[out_.gpus[j].pci].bus_id;
    const std::vector<std::string>& a = nvlink_targets_[i];
    const std::vector<std::string>& b = nvlink_targets_[j];
    if (std::find(a.begin(), a.end(), bus_j) != a.end()) return true;
    if (std::find(b.begin(), b.end(), out_.pci[out_.gpus[i].pci].bus_id) != b.end()) return true;
    return std::any_of(a.begin(), a.end(), [&b](const std::string& t) {
      return t.starts_with("switch:") && std::find(b.begin(), b.end(), t) != b.end();
    });
  }

  std::string origin_;
  Topology& out_;
  std::vector<std::vector<std::string>> nvlink_targets_;  // parallel to out_.gpus
};

}  // namespace

Result<Topology> readNcclXml(std::string_view text, std::string origin) {
  PSDP_ASSIGN_OR_RETURN(XmlDocument doc, parseXmlDocument(text, origin));
  const xmlNode* root = xmlDocGetRootElement(doc.get());
  if (root == nullptr || !isElement(root, "system")) {
    return Status::invalidArgument("{}: not an NCCL topology (root element is not <system>)", origin);
  }
  Topology topology;
  topology.source = TopologySource::kNcclXml;
  topology.origin = std::move(origin);
  NcclImporter importer(topology.origin, topology);
  PSDP_RETURN_IF_ERROR(importer.run(root));
  return topology;
}

}  // namespace psdp::topo
