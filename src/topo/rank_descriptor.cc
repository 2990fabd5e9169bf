#include "topo/rank_descriptor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace psdp::topo {
namespace {

// What the wire form carries at most. A descriptor is a few hundred bytes (rank_descriptor.h); the bounds keep a
// corrupt or hostile buffer from making decode allocate more than a few kilobytes. describeRank refuses a host
// beyond them, so that whatever it makes also decodes.
constexpr size_t kMaxDescriptorString = 255;  // host id, bus id, NIC name, locality token
constexpr size_t kMaxDescriptorNics = 64;
constexpr size_t kMaxLocalityTokens = 64;
constexpr size_t kMaxDescriptorNumaNodes = 64;

// FNV-1a, 64 bits: a fixed function of the bytes (std::hash may differ between builds, and ranks of one host
// may run different binaries of one release).
class Fnv1a {
 public:
  void bytes(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) hash_ = (hash_ ^ p[i]) * 0x100000001b3ull;
  }
  void number(int64_t value) {
    // Little-endian whatever the host order, so the digest is a property of the machine, not the CPU.
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(static_cast<uint64_t>(value) >> (8 * i));
    bytes(le, sizeof le);
  }
  // The length first, so that ("ab", "c") and ("a", "bc") differ.
  void string(const std::string& s) {
    number(static_cast<int64_t>(s.size()));
    bytes(s.data(), s.size());
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

const std::string& busIdOf(const Topology& t, int pci) {
  static const std::string kNone;
  return pci >= 0 ? t.pci[pci].bus_id : kNone;
}

// GPUs by bus id only: their names are not a property of the machine (CUDA numbers the devices each process
// sees after CUDA_VISIBLE_DEVICES, so two ranks of one host may both call different GPUs "cuda0"). A GPU
// without a PCI function (none in the formats we read today) falls back to its name.
uint64_t machineDigest(const Topology& t) {
  Fnv1a h;
  h.number(static_cast<int64_t>(t.packages.size()));
  for (const Package& p : t.packages) h.number(p.os_index);
  h.number(static_cast<int64_t>(t.numa_nodes.size()));
  for (const NumaNode& n : t.numa_nodes) h.number(n.os_index);
  h.number(static_cast<int64_t>(t.cores.size()));
  h.number(static_cast<int64_t>(t.gpus.size()));
  for (const Gpu& g : t.gpus) h.string(g.pci >= 0 ? busIdOf(t, g.pci) : g.name);
  h.number(static_cast<int64_t>(t.nics.size()));
  for (const Nic& n : t.nics) {
    h.string(n.name);
    h.string(busIdOf(t, n.pci));
  }
  return h.value();
}

// "dddd:bb:dd.f" from what users and libraries write: any case, NVML's 8-digit domain ("00000000:17:00.0"),
// or no domain at all ("17:00.0", domain 0).
std::string normaliseBusId(const std::string& bus_id) {
  std::string s = bus_id;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  size_t colons = std::count(s.begin(), s.end(), ':');
  if (colons == 1) return "0000:" + s;
  size_t first = s.find(':');
  if (colons == 2 && first == 8 && s.compare(0, 4, "0000") == 0) return s.substr(4);
  return s;
}

int gpuWithBusId(const Topology& t, const std::string& bus_id) {
  for (size_t g = 0; g < t.gpus.size(); ++g) {
    if (t.gpus[g].pci >= 0 && t.pci[t.gpus[g].pci].bus_id == bus_id) return static_cast<int>(g);
  }
  return -1;
}

std::string knownGpus(const Topology& t) {
  std::string list;
  for (const Gpu& g : t.gpus) list += (list.empty() ? "" : ", ") + (g.pci >= 0 ? busIdOf(t, g.pci) : g.name);
  return list.empty() ? "none" : list;
}

int numaPosition(const Topology& t, int os_index) {
  for (size_t i = 0; i < t.numa_nodes.size(); ++i) {
    if (t.numa_nodes[i].os_index == os_index) return static_cast<int>(i);
  }
  return -1;
}

// NCCL files give packages nowhere; hwloc groups above NUMA nodes give them on the node, not the anchor.
int packageOfAnchor(const Topology& t, const CpuAnchor& anchor) {
  if (anchor.package >= 0) return anchor.package;
  return anchor.numa.empty() ? -1 : t.numa_nodes[anchor.numa.front()].package;
}

std::string packageToken(const Topology& t, int package) {
  return package >= 0 ? fmt::format("pkg{}", t.packages[package].os_index) : "pkg?";
}
std::string numaToken(const Topology& t, int numa) {
  return numa >= 0 ? fmt::format("numa{}", t.numa_nodes[numa].os_index) : "numa?";
}

// Root to device. An hwloc host bridge has no bus id of its own; its index tells the host's bridges apart,
// which is all the mapper needs (it compares tokens of one host only). The walk is bounded so that a model
// with a parent cycle cannot hang it.
void appendPciPath(const Topology& t, int pci, std::vector<std::string>& tokens) {
  std::vector<std::string> upward;
  for (int at = pci; at >= 0 && upward.size() < kMaxLocalityTokens; at = t.pci[at].parent) {
    upward.push_back(t.pci[at].bus_id.empty() ? fmt::format("bridge#{}", at) : t.pci[at].bus_id);
  }
  tokens.insert(tokens.end(), upward.rbegin(), upward.rend());
}

std::vector<std::string> gpuLocality(const Topology& t, const Gpu& gpu) {
  std::vector<std::string> tokens;
  const CpuAnchor* anchor = gpu.anchor >= 0 ? &t.anchors[gpu.anchor] : nullptr;
  tokens.push_back(packageToken(t, anchor ? packageOfAnchor(t, *anchor) : -1));
  tokens.push_back(numaToken(t, anchor && !anchor->numa.empty() ? anchor->numa.front() : -1));
  tokens.push_back(gpu.anchor >= 0 ? fmt::format("cpu{}", gpu.anchor) : "cpu?");
  appendPciPath(t, gpu.pci, tokens);
  return tokens;
}

std::vector<std::string> cpuLocality(const Topology& t, int numa) {
  if (numa < 0) return {};
  return {packageToken(t, t.numa_nodes[numa].package), numaToken(t, numa)};
}

std::vector<int> candidateNics(const Topology& t) {
  bool any_fabric = countNics(t, NicKind::kFabric) > 0;
  std::vector<int> nics;
  for (int i = 0; i < static_cast<int>(t.nics.size()); ++i) {
    if (!any_fabric || t.nics[i].kind == NicKind::kFabric) nics.push_back(i);
  }
  return nics;
}

// A CPU-only rank has no device for classifyPath; its memory sits on NUMA node `numa` (a position), so a NIC
// hanging off that node is as close as a NIC gets to a CPU (PHB, as for a GPU under the same root complex),
// one on another node of the same socket is NODE, anything else SYS. An unknown node makes every NIC SYS.
PathClass cpuToNic(const Topology& t, int numa, const Nic& nic) {
  if (numa < 0 || nic.anchor < 0) return PathClass::kSys;
  const CpuAnchor& anchor = t.anchors[nic.anchor];
  if (std::find(anchor.numa.begin(), anchor.numa.end(), numa) != anchor.numa.end()) return PathClass::kPhb;
  int package = t.numa_nodes[numa].package;
  return package >= 0 && package == packageOfAnchor(t, anchor) ? PathClass::kNode : PathClass::kSys;
}

template <typename PathFn>
std::vector<NicCandidate> nicCandidates(const Topology& t, PathFn path_to) {
  std::vector<int> nics = candidateNics(t);
  std::vector<PathClass> paths(t.nics.size(), PathClass::kSys);
  for (int n : nics) paths[n] = path_to(n);
  // Index order already holds, so a stable sort by class gives "best class, then host order".
  std::stable_sort(nics.begin(), nics.end(), [&paths](int a, int b) { return paths[a] < paths[b]; });
  std::vector<NicCandidate> out;
  for (int n : nics) out.push_back(NicCandidate{t.nics[n].name, paths[n], t.nics[n].speed_mbps});
  return out;
}

std::vector<int> numaOsIndexes(const Topology& t) {
  std::vector<int> nodes;
  for (const NumaNode& n : t.numa_nodes) nodes.push_back(n.os_index);
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

// What the wire form can carry, checked here so that every descriptor describeRank makes also decodes.
Status checkLimits(const RankDescriptor& d) {
  if (d.host_id.size() > kMaxDescriptorString) {
    return Status::invalidArgument("host id '{}...' is {} bytes long; at most {} are allowed (PSDP_HOST_ID)",
                                   d.host_id.substr(0, 32), d.host_id.size(), kMaxDescriptorString);
  }
  if (d.host_numa_nodes.size() > kMaxDescriptorNumaNodes || d.nics.size() > kMaxDescriptorNics ||
      d.locality.size() > kMaxLocalityTokens) {
    return Status::unsupported("host {} has {} NUMA nodes, {} NICs and a locality path of {}: at most {}, {}, {}",
                               d.host_id, d.host_numa_nodes.size(), d.nics.size(), d.locality.size(),
                               kMaxDescriptorNumaNodes, kMaxDescriptorNics, kMaxLocalityTokens);
  }
  for (const NicCandidate& nic : d.nics) {
    if (nic.name.size() > kMaxDescriptorString) return Status::unsupported("NIC name '{}' is too long", nic.name);
  }
  return Status::ok();
}

}  // namespace

Result<RankDescriptor> describeRank(const Topology& host, std::string host_id, const std::string& gpu_bus_id,
                                    int cpu_numa_node) {
  RankDescriptor d;
  d.host_id = std::move(host_id);
  d.machine_digest = machineDigest(host);
  d.host_numa_nodes = numaOsIndexes(host);
  // A binding is a hint, never a reason to fail init: a node the model does not have (a topology file that is
  // not this machine, a cgroup view hwloc filtered) counts as unknown.
  int cpu_numa = cpu_numa_node >= 0 ? numaPosition(host, cpu_numa_node) : -1;
  if (cpu_numa < 0) cpu_numa_node = -1;
  if (gpu_bus_id.empty()) {
    d.numa_node = cpu_numa_node;
    d.locality = cpuLocality(host, cpu_numa);
    d.nics = nicCandidates(host, [&](int n) { return cpuToNic(host, cpu_numa, host.nics[n]); });
  } else {
    std::string bus_id = normaliseBusId(gpu_bus_id);
    int gpu = gpuWithBusId(host, bus_id);
    if (gpu < 0) {
      return Status::invalidArgument("GPU {} is not in the topology of {} (GPUs: {})", gpu_bus_id, host.origin,
                                     knownGpus(host));
    }
    const Gpu& g = host.gpus[gpu];
    d.gpu_bus_id = bus_id;
    // The GPU's node, where its staging buffers belong; the CPU binding only when the model does not say.
    bool anchored = g.anchor >= 0 && !host.anchors[g.anchor].numa.empty();
    d.numa_node = anchored ? host.numa_nodes[host.anchors[g.anchor].numa.front()].os_index : cpu_numa_node;
    d.locality = gpuLocality(host, g);
    d.nics = nicCandidates(host, [&](int n) { return classifyPath(host, DeviceRef::gpu(gpu), DeviceRef::nic(n)); });
  }
  PSDP_RETURN_IF_ERROR(checkLimits(d));
  return d;
}

namespace {

// Wire form, version 1, every integer little-endian:
//   "PSDR" u16 version | str host_id | u64 machine_digest | i32 numa_node | u16 n, n x i32 host_numa_nodes |
//   str gpu_bus_id | u16 n, n x str locality | u16 n, n x (str name, u8 path class, u64 speed_mbps)
// where str is u16 length + bytes. Lengths and counts are 16-bit although the limits are smaller, so that
// encode can saturate an oversized field (65535) instead of wrapping it into a plausible one: decode then
// refuses it by name.
constexpr std::byte kMagic[4] = {std::byte{'P'}, std::byte{'S'}, std::byte{'D'}, std::byte{'R'}};
constexpr uint16_t kWireVersion = 1;

class Writer {
 public:
  void raw(const void* data, size_t size) {
    const auto* p = static_cast<const std::byte*>(data);
    out_.insert(out_.end(), p, p + size);
  }
  void integer(uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<std::byte>(value >> (8 * i)));
  }
  static uint16_t saturated(size_t n) { return static_cast<uint16_t>(std::min<size_t>(n, 0xffff)); }
  void count(size_t n) { integer(saturated(n), 2); }
  void string(const std::string& s) {
    uint16_t n = saturated(s.size());
    integer(n, 2);
    raw(s.data(), n);
  }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  std::vector<std::byte> out_;
};

// Reads fields in order; the first failure is kept and every later read fails too, so decode checks once per
// group of fields instead of after every integer.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  uint64_t integer(int bytes, const char* what) {
    if (!need(static_cast<size_t>(bytes), what)) return 0;
    uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(bytes_[at_ + i]) << (8 * i);
    at_ += bytes;
    return value;
  }
  int32_t signed32(const char* what) { return static_cast<int32_t>(static_cast<uint32_t>(integer(4, what))); }
  size_t count(size_t max, const char* what) {
    size_t n = integer(2, what);
    if (n > max) fail(fmt::format("{} count {} exceeds {}", what, n, max));
    return ok() ? n : 0;
  }
  std::string string(const char* what) {
    size_t n = integer(2, what);
    if (n > kMaxDescriptorString) fail(fmt::format("{} is {} bytes, more than {}", what, n, kMaxDescriptorString));
    if (!need(n, what)) return {};
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return s;
  }
  bool magic() {
    if (!need(sizeof kMagic, "magic")) return false;
    if (!std::equal(std::begin(kMagic), std::end(kMagic), bytes_.begin())) fail("bad magic (not a rank descriptor)");
    at_ += sizeof kMagic;
    return ok();
  }
  void fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }
  bool ok() const { return error_.empty(); }
  size_t left() const { return bytes_.size() - at_; }
  Status status() const {
    return ok() ? Status::ok() : Status::invalidArgument("rank descriptor of {} bytes: {}", bytes_.size(), error_);
  }

 private:
  bool need(size_t n, const char* what) {
    if (!ok()) return false;
    if (n <= left()) return true;
    fail(fmt::format("truncated at byte {} reading {} ({} bytes needed, {} left)", at_, what, n, left()));
    return false;
  }

  std::span<const std::byte> bytes_;
  size_t at_ = 0;
  std::string error_;
};

void readNics(Reader& in, std::vector<NicCandidate>& nics) {
  size_t n = in.count(kMaxDescriptorNics, "NIC");
  for (size_t i = 0; i < n && in.ok(); ++i) {
    NicCandidate nic;
    nic.name = in.string("NIC name");
    uint64_t path = in.integer(1, "NIC path class");
    if (path > static_cast<uint64_t>(PathClass::kSys)) in.fail(fmt::format("NIC path class {} is unknown", path));
    nic.path = static_cast<PathClass>(path);
    nic.speed_mbps = in.integer(8, "NIC speed");
    nics.push_back(std::move(nic));
  }
}

}  // namespace

std::vector<std::byte> encodeDescriptor(const RankDescriptor& d) {
  Writer out;
  out.raw(kMagic, sizeof kMagic);
  out.integer(kWireVersion, 2);
  out.string(d.host_id);
  out.integer(d.machine_digest, 8);
  out.integer(static_cast<uint32_t>(d.numa_node), 4);
  out.count(d.host_numa_nodes.size());
  for (int node : d.host_numa_nodes) out.integer(static_cast<uint32_t>(node), 4);
  out.string(d.gpu_bus_id);
  out.count(d.locality.size());
  for (const std::string& token : d.locality) out.string(token);
  out.count(d.nics.size());
  for (const NicCandidate& nic : d.nics) {
    out.string(nic.name);
    out.integer(static_cast<uint8_t>(nic.path), 1);
    out.integer(nic.speed_mbps, 8);
  }
  return out.take();
}

Result<RankDescriptor> decodeDescriptor(std::span<const std::byte> bytes) {
  Reader in(bytes);
  if (!in.magic()) return in.status();
  uint64_t version = in.integer(2, "version");
  if (in.ok() && version != kWireVersion) {
    in.fail(fmt::format("version {}, this build reads version {} (ranks run different psdp releases?)", version,
                        kWireVersion));
  }
  RankDescriptor d;
  d.host_id = in.string("host id");
  d.machine_digest = in.integer(8, "machine digest");
  d.numa_node = in.signed32("NUMA node");
  if (d.numa_node < -1) in.fail(fmt::format("NUMA node {} is negative", d.numa_node));
  size_t nodes = in.count(kMaxDescriptorNumaNodes, "NUMA node");
  for (size_t i = 0; i < nodes && in.ok(); ++i) {
    d.host_numa_nodes.push_back(in.signed32("host NUMA node"));
    if (d.host_numa_nodes.back() < 0) in.fail(fmt::format("host NUMA node {} is negative", d.host_numa_nodes.back()));
  }
  d.gpu_bus_id = in.string("GPU bus id");
  size_t tokens = in.count(kMaxLocalityTokens, "locality token");
  for (size_t i = 0; i < tokens && in.ok(); ++i) d.locality.push_back(in.string("locality token"));
  readNics(in, d.nics);
  if (in.ok() && in.left() > 0) in.fail(fmt::format("{} trailing bytes", in.left()));
  if (!in.ok()) return in.status();
  return d;
}

}  // namespace psdp::topo
