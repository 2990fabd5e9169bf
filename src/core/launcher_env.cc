#include "core/launcher_env.h"

#include <fmt/ranges.h>

#include <charconv>
#include <cstdint>
#include <vector>

#include "core/bootstrap_protocol.h"
#include "core/net_address.h"

namespace psdp::core {
namespace {

constexpr const char* kSecretVar = "PSDP_JOB_SECRET";
constexpr const char* kRootAddrVar = "PSDP_ROOT_ADDR";
constexpr const char* kRootFdVar = "PSDP_ROOT_FD";

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// What one launcher provides; `name` goes into every message so the user knows which convention psdp
// recognised.
struct Reader {
  const Environment& env;
  const char* id;    // LaunchInfo::launcher
  const char* name;  // for messages

  Result<std::string> required(const char* var) const {
    auto value = env.get(var);
    if (!value || value->empty()) return Status::invalidArgument("{} is required under {}", var, name);
    return *value;
  }

  // A decimal integer in [lo, hi]: digits only, so "1e3", " 4" or "4x" are rejected rather than misread.
  Result<int> integer(const char* var, long long lo, long long hi) const {
    PSDP_ASSIGN_OR_RETURN(std::string text, required(var));
    long long v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size() || v < lo || v > hi) {
      return Status::invalidArgument("{}='{}' under {} is not an integer in [{}, {}]", var, text, name, lo, hi);
    }
    return static_cast<int>(v);
  }

  // The host (resolved to a numeric address) and port of "host", "host:port", "[v6]", "[v6]:port" or a
  // bare IPv6 address; port 0 when absent.
  Result<std::pair<std::string, uint16_t>> hostPort(const char* var) const {
    PSDP_ASSIGN_OR_RETURN(std::string text, required(var));
    auto bad = [&](std::string_view why) {
      return Status::invalidArgument("{}='{}' under {} is not host[:port]: {}", var, text, name, why);
    };
    std::string host = text;
    std::string port_text;
    if (text.front() == '[') {
      size_t close = text.find(']');
      if (close == std::string::npos) return bad("no closing bracket");
      host = text.substr(1, close - 1);
      if (close + 1 < text.size()) {
        if (text[close + 1] != ':') return bad("junk after the bracket");
        port_text = text.substr(close + 2);
      }
    } else if (size_t colon = text.find(':');
               colon != std::string::npos && text.find(':', colon + 1) == std::string::npos) {
      host = text.substr(0, colon);
      port_text = text.substr(colon + 1);
    }
    unsigned port = 0;
    if (!port_text.empty() || text.back() == ':') {
      auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
      if (port_text.empty() || ec != std::errc() || ptr != port_text.data() + port_text.size() || port < 1 ||
          port > 65535) {
        return bad("port is not in [1, 65535]");
      }
    }
    if (host.empty()) return bad("empty host");
    auto resolved = resolveHost(host);
    if (!resolved.isOk()) return Status::invalidArgument("{} under {}: {}", var, name, resolved.status().message());
    return std::make_pair(resolved.value(), static_cast<uint16_t>(port));
  }

  // PSDP_JOB_SECRET when set, else the secret derived from the first alternative of `job_ids` whose
  // variables are all set (their values joined by '.'), else an error naming what could be set.
  using JobIdVars = std::initializer_list<std::initializer_list<const char*>>;
  Result<std::pair<JobSecret, bool>> secret(JobIdVars job_ids) const {
    if (auto hex = env.get(kSecretVar)) {
      auto secret = secretFromHex(*hex);
      // secretFromHex describes the problem without echoing the value.
      if (!secret.isOk())
        return Status::invalidArgument("{} under {}: {}", kSecretVar, name, secret.status().message());
      return std::make_pair(secret.value(), false);
    }
    std::vector<std::string> alternatives;
    for (const auto& vars : job_ids) {
      std::vector<std::string> values;
      for (const char* var : vars) {
        if (auto value = env.get(var); value && !value->empty()) values.push_back(*value);
      }
      if (values.size() == vars.size())
        return std::make_pair(deriveJobSecret(id, fmt::format("{}", fmt::join(values, "."))), true);
      alternatives.push_back(fmt::format("{}", fmt::join(vars, " + ")));
    }
    if (alternatives.empty()) return Status::invalidArgument("{} is required under {}", kSecretVar, name);
    return Status::invalidArgument("{} is required under {}, or a job id to derive a weaker secret from: {}",
                                   kSecretVar, name, fmt::join(alternatives, " or "));
  }
};

// Rank and world size, checked against each other.
Status readRankAndSize(const Reader& r, const char* rank_var, const char* size_var, LaunchInfo& info) {
  PSDP_ASSIGN_OR_RETURN(info.nranks, r.integer(size_var, 1, bootstrap::kMaxRanks));
  PSDP_ASSIGN_OR_RETURN(info.rank, r.integer(rank_var, 0, bootstrap::kMaxRanks - 1));
  if (info.rank >= info.nranks) {
    return Status::invalidArgument("{}={} under {} is not below {}={}", rank_var, info.rank, r.name, size_var,
                                   info.nranks);
  }
  info.launcher = r.id;
  return Status::ok();
}

Status readRootAddr(const Reader& r, LaunchInfo& info) {
  PSDP_ASSIGN_OR_RETURN(auto host_port, r.hostPort(kRootAddrVar));
  info.id.host = host_port.first;
  info.id.port = host_port.second;
  return Status::ok();
}

Status readSecret(const Reader& r, Reader::JobIdVars job_ids, LaunchInfo& info) {
  PSDP_ASSIGN_OR_RETURN(auto secret, r.secret(job_ids));
  info.id.secret = secret.first;
  info.secret_derived = secret.second;
  return Status::ok();
}

Result<LaunchInfo> fromPsdp(const Environment& env) {
  Reader r{env, "psdp", "psdp"};
  LaunchInfo info;
  PSDP_RETURN_IF_ERROR(readRankAndSize(r, "PSDP_RANK", "PSDP_WORLD_SIZE", info));
  PSDP_RETURN_IF_ERROR(readRootAddr(r, info));
  // psdp-run generates a random secret for every job, so a missing one is a broken launch, not a reason
  // to fall back to a weaker derived secret.
  PSDP_RETURN_IF_ERROR(readSecret(r, {}, info));
  // Only rank 0 is handed the socket; a malformed value is ignored like a socket that does not fit, since
  // binding normally still works.
  if (info.rank == 0 && env.get(kRootFdVar)) {
    auto fd = r.integer(kRootFdVar, 0, INT32_MAX);
    if (fd.isOk()) info.root_listener_fd = fd.value();
  }
  return info;
}

// torchrun's MASTER_PORT belongs to its TCPStore, so psdp's root never uses it: the port comes from
// PSDP_ROOT_ADDR, else rank 0 listens on the first free port of PSDP_PORT_RANGE and the others scan it.
Result<LaunchInfo> fromTorchrun(const Environment& env) {
  Reader r{env, "torchrun", "torchrun"};
  LaunchInfo info;
  PSDP_RETURN_IF_ERROR(readRankAndSize(r, "RANK", "WORLD_SIZE", info));
  PSDP_ASSIGN_OR_RETURN(auto master, r.hostPort("MASTER_ADDR"));
  info.id.host = master.first;
  if (env.get(kRootAddrVar)) {
    PSDP_ASSIGN_OR_RETURN(auto root, r.hostPort(kRootAddrVar));
    info.id.port = root.second;
  }
  PSDP_RETURN_IF_ERROR(readSecret(r, {{"TORCHELASTIC_RUN_ID"}}, info));
  return info;
}

Result<LaunchInfo> fromOpenMpi(const Environment& env) {
  Reader r{env, "openmpi", "Open MPI"};
  LaunchInfo info;
  PSDP_RETURN_IF_ERROR(readRankAndSize(r, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", info));
  PSDP_RETURN_IF_ERROR(readRootAddr(r, info));
  PSDP_RETURN_IF_ERROR(
      readSecret(r, {{"OMPI_MCA_orte_hnp_uri"}, {"PMIX_NAMESPACE"}, {"OMPI_MCA_ess_base_jobid"}}, info));
  return info;
}

Result<LaunchInfo> fromSlurm(const Environment& env) {
  Reader r{env, "slurm", "Slurm"};
  LaunchInfo info;
  // Older Slurm sets only SLURM_NPROCS.
  const char* size_var = !env.get("SLURM_NTASKS") && env.get("SLURM_NPROCS") ? "SLURM_NPROCS" : "SLURM_NTASKS";
  PSDP_RETURN_IF_ERROR(readRankAndSize(r, "SLURM_PROCID", size_var, info));
  PSDP_RETURN_IF_ERROR(readRootAddr(r, info));
  // The step id keeps apart the job steps (srun calls) of one allocation, which may run one after another
  // on the same ports.
  PSDP_RETURN_IF_ERROR(readSecret(r, {{"SLURM_JOB_ID", "SLURM_STEP_ID"}}, info));
  return info;
}

}  // namespace

JobSecret deriveJobSecret(std::string_view launcher, std::string_view job_id) {
  std::string input = fmt::format("psdp-derived-secret:{}:{}", launcher, job_id);
  // Two unrelated 64-bit lanes: FNV-1a, and a chain of splitmix64 steps, each finished with splitmix64.
  // Not cryptographic; see the header for why that is acceptable here.
  uint64_t fnv = 0xcbf29ce484222325ull;
  uint64_t chain = 0x6a09e667f3bcc908ull;
  for (unsigned char c : input) {
    fnv = (fnv ^ c) * 0x100000001b3ull;
    chain = splitmix64(chain ^ c);
  }
  uint64_t lanes[2] = {splitmix64(fnv ^ input.size()), splitmix64(chain + input.size())};
  JobSecret secret{};
  for (size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<uint8_t>(lanes[i / 8] >> (8 * (i % 8)));
  return secret;
}

Result<LaunchInfo> launchInfoFromEnv(const Environment& env, const Config& config) {
  Result<LaunchInfo> info = Status::invalidArgument(
      "no launcher environment found: set PSDP_RANK, PSDP_WORLD_SIZE, PSDP_ROOT_ADDR and PSDP_JOB_SECRET (psdp-run "
      "sets them), or run under torchrun (RANK, WORLD_SIZE, MASTER_ADDR), Open MPI (OMPI_COMM_WORLD_RANK, "
      "OMPI_COMM_WORLD_SIZE, with PSDP_ROOT_ADDR) or Slurm (SLURM_PROCID, SLURM_NTASKS, with PSDP_ROOT_ADDR)");
  if (env.get("PSDP_RANK") || env.get("PSDP_WORLD_SIZE")) {
    info = fromPsdp(env);
  } else if (env.get("RANK")) {
    info = fromTorchrun(env);
  } else if (env.get("OMPI_COMM_WORLD_RANK")) {
    info = fromOpenMpi(env);
  } else if (env.get("SLURM_PROCID")) {
    info = fromSlurm(env);
  }
  if (info.isOk() && info.value().id.port == 0 && config.port_range.lo == 0) {
    return Status::invalidArgument(
        "under {} the rendezvous address names no port and PSDP_PORT_RANGE is empty: set "
        "a port in {} or a range in PSDP_PORT_RANGE",
        info.value().launcher, kRootAddrVar);
  }
  return info;
}

}  // namespace psdp::core
