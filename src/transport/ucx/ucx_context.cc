#include "transport/ucx/ucx_context.h"

#include <atomic>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "transport/ucx/ucx_status.h"

namespace psdp::transport::ucx {
namespace {

// A UCX setting psdp changes from UCX's default, unless the user decided it: each is a UCX key (set with
// ucp_config_modify, so the process environment and other UCX users in it are left alone), the UCX_*
// variables that mean the user decided, and the UCX_TLS names that can select a transport reading it.
struct Tuning {
  const char* key;
  const char* value;
  std::span<const char* const> user_vars;
  std::span<const std::string_view> tls_names;
  // Names that, in an exclusion list ("^cma"), remove every transport reading the key.
  std::span<const std::string_view> excluded_by;
  const char* why;
  // Set on the first context of the process, so the choice is logged once, not per communicator.
  std::atomic<bool>* logged;
};

std::atomic<bool> g_shm_logged{false};
std::atomic<bool> g_cma_logged{false};

// UCX 1.13 hides the posix and sysv shared-memory transports from endpoints that ask for peer error
// handling unless they advertise it (UCX_POSIX_ERROR_HANDLING / UCX_SYSV_ERROR_HANDLING, default off);
// every endpoint of psdp asks for it, so without this ranks on one host would talk over TCP loopback.
// Both variables live in the mm transports' shared sub-table, so the one key "MM_ERROR_HANDLING" sets
// both; UCX has no finer key.
constexpr const char* kShmUserVars[] = {"UCX_POSIX_ERROR_HANDLING", "UCX_SYSV_ERROR_HANDLING"};
constexpr std::string_view kShmTlsNames[] = {"all", "sm", "shm", "mm", "posix", "sysv"};
constexpr std::string_view kShmExcludedBy[] = {"sm", "shm", "mm"};
const Tuning kShmErrorHandling{
    .key = "MM_ERROR_HANDLING",
    .value = "y",
    .user_vars = kShmUserVars,
    .tls_names = kShmTlsNames,
    .excluded_by = kShmExcludedBy,
    .why = "posix/sysv shared memory stays usable with peer error handling",
    .logged = &g_shm_logged,
};

// With peer error handling UCX 1.13 picks rendezvous (rma_bw) lanes only among memory domains that
// advertise memory invalidation (UCT_MD_FLAG_INVALIDATE), and CMA advertises it only when
// UCX_CMA_MEMORY_INVALIDATE=y (default n). Without it no rma_bw lane exists between ranks of one host, so
// every large message is copied through sysv/posix in eager-sized fragments at about a third of CMA's
// single-copy bandwidth. Invalidation exists so that a peer declared failed can no longer touch a
// buffer whose operation was completed with an error. CMA cannot revoke access, but psdp does not need it:
// the default rendezvous has the receiver read the sender's buffer (process_vm_readv), so no peer ever
// writes into this process's memory, and on shared memory a peer is declared failed when its process is
// gone, after which it can access nothing. The key has no "CMA_" prefix: UCX matches modified keys
// against each memory domain's own table, where the prefix is already stripped ("CMA_MEMORY_INVALIDATE"
// is rejected as unused); only CMA's table has this field in 1.13.
constexpr const char* kCmaUserVars[] = {"UCX_CMA_MEMORY_INVALIDATE"};
constexpr std::string_view kCmaTlsNames[] = {"all", "sm", "shm", "cma"};
constexpr std::string_view kCmaExcludedBy[] = {"sm", "shm", "cma"};
const Tuning kCmaInvalidate{
    .key = "MEMORY_INVALIDATE",
    .value = "y",
    .user_vars = kCmaUserVars,
    .tls_names = kCmaTlsNames,
    .excluded_by = kCmaExcludedBy,
    .why = "CMA single-copy rendezvous stays usable with peer error handling",
    .logged = &g_cma_logged,
};

bool mentionsAny(std::string_view tls, std::span<const std::string_view> names) {
  while (!tls.empty()) {
    size_t comma = tls.find(',');
    std::string_view name = tls.substr(0, comma);
    for (std::string_view wanted : names) {
      if (name == wanted) return true;
    }
    if (comma == std::string_view::npos) break;
    tls.remove_prefix(comma + 1);
  }
  return false;
}

// UCX warns about every modified key no transport consumed, so a key is set only when the transport list
// can contain a transport that reads it: an exclusion list ("^tcp") that does not remove them all, or a
// list that names one.
bool mayBeSelected(const ContextSpec& spec, const Tuning& tuning) {
  std::optional<std::string> tls = spec.env->get("UCX_TLS");
  for (const auto& [name, value] : spec.overrides) {
    if (name == "TLS") tls = value;
  }
  if (!tls || tls->empty()) return true;
  if ((*tls)[0] == '^') return !mentionsAny(std::string_view(*tls).substr(1), tuning.excluded_by);
  return mentionsAny(*tls, tuning.tls_names);
}

bool firstTime(const Tuning& tuning) {
  return !tuning.logged->exchange(true, std::memory_order_relaxed);
}

Status apply(ucp_config_t* config, const ContextSpec& spec, const Tuning& tuning, spdlog::logger& log) {
  for (const char* name : tuning.user_vars) {
    if (std::optional<std::string> value = spec.env->get(name)) {
      if (firstTime(tuning)) {
        log.info("{}={} set by the user, so psdp does not set UCX_{}={} ({})", name, *value, tuning.key, tuning.value,
                 tuning.why);
      }
      return Status::ok();
    }
  }
  if (!mayBeSelected(spec, tuning)) return Status::ok();
  PSDP_UCS_CHECK(ucp_config_modify(config, tuning.key, tuning.value), fmt::format("set UCX {}", tuning.key));
  if (firstTime(tuning)) log.info("psdp sets UCX_{}={}: {}", tuning.key, tuning.value, tuning.why);
  return Status::ok();
}

}  // namespace

Result<UcpContext> createUcpContext(const ContextSpec& spec, spdlog::logger& log) {
  ucp_config_t* raw_config = nullptr;
  PSDP_UCS_CHECK(ucp_config_read(nullptr, nullptr, &raw_config), "read ucx configuration");
  UcpConfig config(raw_config);
  PSDP_RETURN_IF_ERROR(apply(config.get(), spec, kShmErrorHandling, log));
  if (spec.cma_rendezvous) PSDP_RETURN_IF_ERROR(apply(config.get(), spec, kCmaInvalidate, log));
  for (const auto& [name, value] : spec.overrides) {
    Status status = ucsStatus(ucp_config_modify(config.get(), name.c_str(), value.c_str()),
                              fmt::format("set ucx option {}={}", name, value));
    if (!status.isOk()) return Status::invalidArgument("{}", status.message());
  }

  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                      UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;  // one worker per context
  params.estimated_num_eps = static_cast<size_t>(spec.estimated_num_eps);
  params.name = "psdp";
  ucp_context_h context = nullptr;
  Status status = ucsStatus(ucp_init(&params, config.get(), &context), "ucp init");
  if (!status.isOk()) return Status::system("{}", status.message());
  return UcpContext(context);
}

Result<UcpWorker> createUcpWorker(ucp_context_h context, ucs_thread_mode_t thread_mode) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = thread_mode;
  ucp_worker_h worker = nullptr;
  Status status = ucsStatus(ucp_worker_create(context, &params, &worker), "create ucp worker");
  if (!status.isOk()) return Status::system("{}", status.message());
  return UcpWorker(worker);
}

Result<std::vector<std::byte>> workerAddress(ucp_worker_h worker) {
  ucp_address_t* address = nullptr;
  size_t length = 0;
  PSDP_UCS_CHECK(ucp_worker_get_address(worker, &address, &length), "get worker address");
  const auto* bytes = reinterpret_cast<const std::byte*>(address);
  std::vector<std::byte> copy(bytes, bytes + length);
  ucp_worker_release_address(worker, address);
  return copy;
}

}  // namespace psdp::transport::ucx
