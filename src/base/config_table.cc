// The table of every configuration parameter. Add a parameter here and nowhere else: resolution, psdp-info
// and the README table follow from this row.
#include <algorithm>
#include <cstddef>
#include <cstdio>

#include "base/config.h"

namespace psdp {
namespace {

// True when the caller's struct is large enough to contain `field` (an older caller's struct may not).
#define PSDP_USER_HAS(user, field) \
  ((user).size >= offsetof(psdp_config_t, field) + sizeof(((psdp_config_t*)nullptr)->field))

const char* logLevelName(psdp_log_level_t level) {
  switch (level) {
    case PSDP_LOG_OFF: return "off";
    case PSDP_LOG_ERROR: return "error";
    case PSDP_LOG_WARN: return "warn";
    case PSDP_LOG_INFO: return "info";
    case PSDP_LOG_DEBUG: return "debug";
    case PSDP_LOG_TRACE: return "trace";
    default: return nullptr;
  }
}

const char* progressModeName(psdp_progress_mode_t mode) {
  switch (mode) {
    case PSDP_PROGRESS_THREAD: return "thread";
    case PSDP_PROGRESS_CALLER: return "caller";
    default: return nullptr;
  }
}

std::string formatSeconds(double s) {
  return fmt::format("{:g}", s);
}

std::optional<std::string> userString(const char* value) {
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Status parsePortRange(std::string_view text, PortRange& out) {
  if (text.empty()) {
    out = PortRange{};
    return Status::ok();
  }
  size_t dash = text.find('-');
  std::string_view lo_text = text.substr(0, dash);
  std::string_view hi_text = dash == std::string_view::npos ? lo_text : text.substr(dash + 1);
  auto lo = parseInteger(lo_text);
  auto hi = parseInteger(hi_text);
  if (!lo.isOk() || !hi.isOk() || lo.value() < 1 || hi.value() > 65535 || lo.value() > hi.value()) {
    return Status::invalidArgument("port range '{}' is not 'lo-hi' with 1 <= lo <= hi <= 65535", text);
  }
  out = PortRange{static_cast<int>(lo.value()), static_cast<int>(hi.value())};
  return Status::ok();
}

// "[domain:]bus:device.function" in hex (CUDA prints a domain of 4 or 8 digits) to "dddd:bb:dd.f".
Result<std::string> normalizeBusId(std::string_view text) {
  unsigned long domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  std::string copy(text);
  int colons = static_cast<int>(std::count(copy.begin(), copy.end(), ':'));
  int parsed = colons == 2
                   ? std::sscanf(copy.c_str(), "%8lx:%2lx:%2lx.%1lx%c", &domain, &bus, &device, &function, &tail)
                   : std::sscanf(copy.c_str(), "%2lx:%2lx.%1lx%c", &bus, &device, &function, &tail) + 1;
  bool digits_only = copy.find_first_not_of("0123456789abcdefABCDEF:.") == std::string::npos;
  if (!digits_only || (colons != 1 && colons != 2) || parsed != 4 || device > 0x1f || function > 7) {
    return Status::invalidArgument("'{}' is not a PCI bus id ([domain:]bus:device.function in hex)", text);
  }
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
}

// PSDP_MAX_IN_FLIGHT's upper bound: the engine reserves its queue for this many requests.
constexpr long long kMaxInFlightLimit = 65536;

const ParamSpec kParamTable[] = {
    {"timeout", "PSDP_TIMEOUT", "seconds", "600",
     "Longest time any blocking call (init, collective, wait, finalize) may take; on expiry the call returns "
     "timeout and the communicator is failed.",
     [](const psdp_config_t& u) -> std::optional<std::string> {
       if (!PSDP_USER_HAS(u, timeout_s) || u.timeout_s < 0) return std::nullopt;
       return formatSeconds(u.timeout_s);
     },
     [](std::string_view text, Config& c) -> Status {
       auto v = parseSeconds(text);
       if (!v.isOk() || v.value() <= 0)
         return Status::invalidArgument("'{}' is not a positive number of seconds", text);
       c.timeout_s = v.value();
       return Status::ok();
     },
     [](const Config& c) { return formatSeconds(c.timeout_s); }},

    {"fragment_bytes", "PSDP_FRAGMENT_BYTES", "bytes", "1M",
     "Fragment size of pipelined transfers: large collectives move in fragments of this size, several in "
     "flight, through staging memory allocated once per communicator. Formerly PSDP_CHUNK_BYTES, which is "
     "still read, with a warning.",
     [](const psdp_config_t& u) -> std::optional<std::string> {
       if (!PSDP_USER_HAS(u, fragment_bytes) || u.fragment_bytes == 0) return std::nullopt;
       return std::to_string(u.fragment_bytes);
     },
     [](std::string_view text, Config& c) -> Status {
       auto v = parseBytes(text);
       if (!v.isOk() || v.value() < 64 || v.value() > (size_t{1} << 30)) {
         return Status::invalidArgument("'{}' is not a size between 64 and 1G bytes", text);
       }
       c.fragment_bytes = v.value();
       return Status::ok();
     },
     [](const Config& c) { return std::to_string(c.fragment_bytes); }, "PSDP_CHUNK_BYTES"},

    {"max_in_flight", "PSDP_MAX_IN_FLIGHT", "count", "64",
     "Operations of one communicator posted and not yet complete at most; a nonblocking call beyond it first waits "
     "for the oldest to complete (driving progress itself with PSDP_PROGRESS=caller), so memory stays bounded.",
     [](const psdp_config_t& u) -> std::optional<std::string> {
       if (!PSDP_USER_HAS(u, max_in_flight) || u.max_in_flight == 0) return std::nullopt;
       return fmt::format("{}", u.max_in_flight);
     },
     [](std::string_view text, Config& c) -> Status {
       auto v = parseInteger(text);
       if (!v.isOk() || v.value() < 1 || v.value() > kMaxInFlightLimit) {
         return Status::invalidArgument("'{}' is not a count between 1 and {}", text, kMaxInFlightLimit);
       }
       c.max_in_flight = static_cast<size_t>(v.value());
       return Status::ok();
     },
     [](const Config& c) { return std::to_string(c.max_in_flight); }},

    {"log_level", "PSDP_LOG_LEVEL", "off|error|warn|info|debug|trace", "warn", "Least severe message that is logged.",
     [](const psdp_config_t& u) -> std::optional<std::string> {
       if (!PSDP_USER_HAS(u, log_level) || u.log_level == PSDP_LOG_UNSET) return std::nullopt;
       const char* name = logLevelName(static_cast<psdp_log_level_t>(u.log_level));
       return std::string(name ? name : fmt::format("{}", u.log_level).c_str());
     },
     [](std::string_view text, Config& c) -> Status {
       for (int l = PSDP_LOG_OFF; l <= PSDP_LOG_TRACE; ++l) {
         if (text == logLevelName(static_cast<psdp_log_level_t>(l))) {
           c.log_level = static_cast<psdp_log_level_t>(l);
           return Status::ok();
         }
       }
       return Status::invalidArgument("'{}' is not one of off, error, warn, info, debug, trace", text);
     },
     [](const Config& c) { return std::string(logLevelName(c.log_level)); }},

    {"log_file", "PSDP_LOG_FILE", "path", "",
     "File to log to instead of stderr; '%r' in the path is replaced by the rank, so each rank gets its own file.",
     [](const psdp_config_t& u) { return PSDP_USER_HAS(u, log_file) ? userString(u.log_file) : std::nullopt; },
     [](std::string_view text, Config& c) -> Status {
       c.log_file = std::string(text);
       return Status::ok();
     },
     [](const Config& c) { return c.log_file; }},

    {"socket_ifname", "PSDP_SOCKET_IFNAME", "interface", "",
     "Network interface the bootstrap listens and connects on (e.g. eth0, lo); empty: the first interface "
     "that is up and not loopback, else loopback.",
     [](const psdp_config_t& u) {
       return PSDP_USER_HAS(u, socket_ifname) ? userString(u.socket_ifname) : std::nullopt;
     },
     [](std::string_view text, Config& c) -> Status {
       c.socket_ifname = std::string(text);
       return Status::ok();
     },
     [](const Config& c) { return c.socket_ifname; }},

    {"port_range", "PSDP_PORT_RANGE", "lo-hi", "29600-29699",
     "TCP ports the bootstrap root may listen on when the rendezvous address names no port (torchrun's "
     "MASTER_PORT belongs to its own store, so psdp listens in this range instead).",
     [](const psdp_config_t& u) { return PSDP_USER_HAS(u, port_range) ? userString(u.port_range) : std::nullopt; },
     [](std::string_view text, Config& c) -> Status { return parsePortRange(text, c.port_range); },
     [](const Config& c) {
       return c.port_range.lo == 0 ? std::string() : fmt::format("{}-{}", c.port_range.lo, c.port_range.hi);
     }},

    {"progress", "PSDP_PROGRESS", "thread|caller", "thread",
     "Who drives collectives and the transport: 'thread' runs, per communicator made by init (its splits share "
     "them), a thread that advances posted operations in the background and a transport thread that sleeps on "
     "UCX's event fd when idle; 'caller' has no thread, blocking calls and psdp_request_test/wait drive progress "
     "themselves. All ranks must agree (it decides UCX's lanes).",
     [](const psdp_config_t& u) -> std::optional<std::string> {
       if (!PSDP_USER_HAS(u, progress_mode) || u.progress_mode == PSDP_PROGRESS_UNSET) return std::nullopt;
       const char* name = progressModeName(static_cast<psdp_progress_mode_t>(u.progress_mode));
       return std::string(name ? name : fmt::format("{}", u.progress_mode).c_str());
     },
     [](std::string_view text, Config& c) -> Status {
       for (auto mode : {PSDP_PROGRESS_THREAD, PSDP_PROGRESS_CALLER}) {
         if (text == progressModeName(mode)) {
           c.progress_mode = mode;
           return Status::ok();
         }
       }
       return Status::invalidArgument("'{}' is not one of thread, caller", text);
     },
     [](const Config& c) { return std::string(progressModeName(c.progress_mode)); }},

    {"algorithm", "PSDP_ALGORITHM", "auto|ring|rhd|direct", "auto",
     "Collective algorithm: 'auto' follows the built-in rules (psdp-info --algorithms): recursive "
     "halving/doubling below 256 KiB (all-reduce that fits one staging fragment; reduce-scatter and all-gather "
     "on power-of-two rank counts), and above it the direct algorithm where every rank can reach every other "
     "rank's buffers (one host: ranks of one process, buffers from psdp_mem_alloc, or CMA reads), else the "
     "pipelined ring; 'ring' and 'rhd' force one where it applies, 'direct' tries it at every size. Rules of "
     "PSDP_ALGORITHMS come first. Ignored when PSDP_DETERMINISTIC=1.",
     [](const psdp_config_t& u) -> std::optional<std::string> {
       if (!PSDP_USER_HAS(u, algorithm) || u.algorithm == PSDP_ALGORITHM_UNSET) return std::nullopt;
       const char* name = algorithmName(static_cast<psdp_algorithm_t>(u.algorithm));
       return std::string(name ? name : fmt::format("{}", u.algorithm).c_str());
     },
     [](std::string_view text, Config& c) -> Status {
       for (auto algorithm : {PSDP_ALGORITHM_AUTO, PSDP_ALGORITHM_RING, PSDP_ALGORITHM_RHD, PSDP_ALGORITHM_DIRECT}) {
         if (text == algorithmName(algorithm)) {
           c.algorithm = algorithm;
           return Status::ok();
         }
       }
       return Status::invalidArgument("'{}' is not one of auto, ring, rhd, direct", text);
     },
     [](const Config& c) { return std::string(algorithmName(c.algorithm)); }},

    {"algorithms", "PSDP_ALGORITHMS", "rules", "",
     "Rules choosing the algorithm of each call ahead of the built-in ones (psdp-info --algorithms prints the "
     "table in force): ';'-separated <collective>:<min>-<max>=<ring|rhd|direct>[,option=value...], collective "
     "all-reduce, reduce-scatter, all-gather, broadcast or *, sizes of the whole buffer from min up to max "
     "(exclusive, empty: no bound), options ranks=<min>-<max>, fallback=ring|rhd, cma=0|1, stream=0|1, "
     "backoff=<n>, fragment=<bytes>, depth=<n>. The first matching rule decides; checked at init. All ranks must "
     "agree.",
     [](const psdp_config_t& u) { return PSDP_USER_HAS(u, algorithms) ? userString(u.algorithms) : std::nullopt; },
     [](std::string_view text, Config& c) -> Status {
       c.algorithms = std::string(text);
       return Status::ok();
     },
     [](const Config& c) { return c.algorithms; }},

    {"tuning_file", "PSDP_TUNING_FILE", "path|none", "",
     "Tuning file of measured rules per interconnect (psdp-tune writes one; README, Tuning): the rules of the "
     "section for this communicator's interconnect (its signature: transport lanes, hosts, ranks per host) "
     "come after PSDP_ALGORITHMS and PSDP_ALGORITHM and before the built-in rules; a file without a section "
     "for the interconnect is ignored, with an info line saying why. Empty: the first of "
     "$XDG_CONFIG_HOME/psdp/tuning (else ~/.config/psdp/tuning) and /etc/psdp/tuning that exists; none: no "
     "file. Read at init and checked whole, errors naming the line and column. All ranks must load the same "
     "rules.",
     [](const psdp_config_t& u) { return PSDP_USER_HAS(u, tuning_file) ? userString(u.tuning_file) : std::nullopt; },
     [](std::string_view text, Config& c) -> Status {
       c.tuning_file = std::string(text);
       return Status::ok();
     },
     [](const Config& c) { return c.tuning_file; }},

    {"host_collectives", "PSDP_HOST_COLLECTIVES", "host|host-ring", "host",
     "Collective provider for host memory (psdp-info --providers lists them): host runs the ring, recursive "
     "halving/doubling and direct algorithms the algorithm table chooses; host-ring runs every operation on the "
     "plain ring whatever the table says (a reference, to tell a problem of the algorithm choice from one of the "
     "data path). Checked at init. All ranks must agree.",
     [](const psdp_config_t&) -> std::optional<std::string> { return std::nullopt; },
     [](std::string_view text, Config& c) -> Status {
       if (text.empty()) return Status::invalidArgument("the provider name is empty");
       c.host_collectives = std::string(text);
       return Status::ok();
     },
     [](const Config& c) { return c.host_collectives; }},

    {"deterministic", "PSDP_DETERMINISTIC", "0|1", "0",
     "1: every reduction uses the ring, whose order of operations depends only on the element count and the "
     "number of ranks, so float results are bitwise reproducible whatever the message size, PSDP_FRAGMENT_BYTES "
     "or PSDP_ALGORITHM.",
     [](const psdp_config_t& u) -> std::optional<std::string> {
       if (!PSDP_USER_HAS(u, deterministic) || u.deterministic < 0) return std::nullopt;
       return fmt::format("{}", u.deterministic);
     },
     [](std::string_view text, Config& c) -> Status {
       if (text != "0" && text != "1") return Status::invalidArgument("'{}' is not 0 or 1", text);
       c.deterministic = text == "1";
       return Status::ok();
     },
     [](const Config& c) { return std::string(c.deterministic ? "1" : "0"); }},

    {"split_share", "PSDP_SPLIT_SHARE", "0|1", "1",
     "1: the communicators a split makes (psdp_comm_split, psdp_comm_split_layout) are teams on the parent's "
     "transport and progress thread, so a process has no more threads and UCX workers with them than without; "
     "0: each gets a transport and a thread of its own. Read from the config given to the split (or the "
     "parent's); all ranks of the parent must agree, or every new communicator gets its own.",
     [](const psdp_config_t& u) -> std::optional<std::string> {
       if (!PSDP_USER_HAS(u, split_share) || u.split_share < 0) return std::nullopt;
       return fmt::format("{}", u.split_share);
     },
     [](std::string_view text, Config& c) -> Status {
       if (text != "0" && text != "1") return Status::invalidArgument("'{}' is not 0 or 1", text);
       c.split_share = text == "1";
       return Status::ok();
     },
     [](const Config& c) { return std::string(c.split_share ? "1" : "0"); }},

    {"check", "PSDP_CHECK", "full|off", "full",
     "full: every collective agrees its call (kind, count, dtype, op, root) across ranks in log2(ranks) rounds "
     "of small messages alongside its data, so a rank that called differently is named on every rank and no "
     "rank returns success from a mismatched call; off: no agreement, a few microseconds less per call, for "
     "programs known to call alike (a mismatch may then time out or, with equal sizes, return wrong data). "
     "All ranks must agree.",
     [](const psdp_config_t& u) -> std::optional<std::string> {
       if (!PSDP_USER_HAS(u, check) || u.check == PSDP_CHECK_UNSET) return std::nullopt;
       if (u.check == PSDP_CHECK_FULL) return std::string("full");
       if (u.check == PSDP_CHECK_OFF) return std::string("off");
       return fmt::format("{}", u.check);  // rejected by the parser, naming the value
     },
     [](std::string_view text, Config& c) -> Status {
       if (text != "full" && text != "off") return Status::invalidArgument("'{}' is not full or off", text);
       c.check_calls = text == "full";
       return Status::ok();
     },
     [](const Config& c) { return std::string(c.check_calls ? "full" : "off"); }},

    {"topo_file", "PSDP_TOPO_FILE", "path", "",
     "Topology the mapper places ranks with: an hwloc 2 XML export (lstopo x.xml) or an NCCL topology "
     "file (NCCL_TOPO_FILE format), in UTF-8; empty: discover this machine with hwloc.",
     [](const psdp_config_t& u) { return PSDP_USER_HAS(u, topo_file) ? userString(u.topo_file) : std::nullopt; },
     [](std::string_view text, Config& c) -> Status {
       c.topo_file = std::string(text);
       return Status::ok();
     },
     [](const Config& c) { return c.topo_file; }},

    {"host_id", "PSDP_HOST_ID", "string", "",
     "Which host this rank is on, for the mapper: ranks with the same id share a host (shard groups stay inside "
     "one). Empty: the hostname; set it where hostnames mislead (containers, separate UTS namespaces).",
     [](const psdp_config_t& u) { return PSDP_USER_HAS(u, host_id) ? userString(u.host_id) : std::nullopt; },
     [](std::string_view text, Config& c) -> Status {
       if (text.size() > 255) return Status::invalidArgument("host id of {} bytes is over 255", text.size());
       c.host_id = std::string(text);
       return Status::ok();
     },
     [](const Config& c) { return c.host_id; }},

    {"gpu_bus_id", "PSDP_GPU_BUS_ID", "dddd:bb:dd.f", "",
     "PCI bus id of this rank's GPU (as cudaDeviceGetPCIBusId gives it), so the mapper can place the rank by "
     "its GPU's NIC and NUMA node; empty: the rank is placed CPU-only.",
     [](const psdp_config_t& u) { return PSDP_USER_HAS(u, gpu_bus_id) ? userString(u.gpu_bus_id) : std::nullopt; },
     [](std::string_view text, Config& c) -> Status {
       if (text.empty()) {
         c.gpu_bus_id.clear();
         return Status::ok();
       }
       PSDP_ASSIGN_OR_RETURN(c.gpu_bus_id, normalizeBusId(text));
       return Status::ok();
     },
     [](const Config& c) { return c.gpu_bus_id; }},

    {"trace_file", "PSDP_TRACE_FILE", "path", "",
     "Chrome trace-event JSON of this process's collectives (open it in Perfetto): a slice per operation from its "
     "start to its completion, a track per communicator, written at exit; \"%r\" is replaced by the rank. Read "
     "from the environment by the first communicator made by init; empty: no trace.",
     [](const psdp_config_t&) -> std::optional<std::string> { return std::nullopt; },
     [](std::string_view text, Config& c) -> Status {
       c.trace_file = std::string(text);
       return Status::ok();
     },
     [](const Config& c) { return c.trace_file; }},
};

static_assert(std::size(kParamTable) <= Config::kMaxParams, "raise Config::kMaxParams");

}  // namespace

std::span<const ParamSpec> params() {
  return kParamTable;
}

}  // namespace psdp
