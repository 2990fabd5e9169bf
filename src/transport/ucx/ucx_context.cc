#include "transport/ucx/ucx_context.h"

#include <optional>
#include <string>
#include <string_view>

#include "transport/ucx/ucx_status.h"

namespace psdp::transport::ucx {
namespace {

// UCX 1.13 hides the posix and sysv shared-memory transports from endpoints that ask for peer error
// handling unless they advertise it (UCX_POSIX_ERROR_HANDLING / UCX_SYSV_ERROR_HANDLING, default off);
// every endpoint of psdp asks for it, so without this ranks on one host would talk over TCP loopback.
// Both variables live in the mm transports' shared sub-table, so the one key "MM_ERROR_HANDLING" sets
// both; UCX has no finer key. ucp_config_modify is used instead of setenv so the process environment and
// other UCX users in it are left alone.
constexpr const char* kShmErrorHandlingKey = "MM_ERROR_HANDLING";
constexpr const char* kUserShmErrorHandlingVars[] = {"UCX_POSIX_ERROR_HANDLING", "UCX_SYSV_ERROR_HANDLING"};

// Aliases and names of UCX_TLS that can select posix or sysv.
constexpr std::string_view kShmTlsNames[] = {"all", "sm", "shm", "mm", "posix", "sysv"};

bool mentionsShm(std::string_view tls) {
  while (!tls.empty()) {
    size_t comma = tls.find(',');
    std::string_view name = tls.substr(0, comma);
    for (std::string_view shm : kShmTlsNames) {
      if (name == shm) return true;
    }
    if (comma == std::string_view::npos) break;
    tls.remove_prefix(comma + 1);
  }
  return false;
}

// UCX warns about every modified key no transport consumed, so the key is set only when the transport
// list can contain posix or sysv: an exclusion list ("^tcp") or one that names them.
bool shmMayBeSelected(const ContextSpec& spec) {
  std::optional<std::string> tls = spec.env->get("UCX_TLS");
  for (const auto& [name, value] : spec.overrides) {
    if (name == "TLS") tls = value;
  }
  if (!tls || tls->empty() || (*tls)[0] == '^') return true;
  return mentionsShm(*tls);
}

Status applyShmErrorHandling(ucp_config_t* config, const ContextSpec& spec, spdlog::logger& log) {
  for (const char* name : kUserShmErrorHandlingVars) {
    if (spec.env->get(name)) {
      log.debug("{} set by the user; leaving shared-memory error handling to the environment", name);
      return Status::ok();
    }
  }
  if (!shmMayBeSelected(spec)) return Status::ok();
  PSDP_UCS_CHECK(ucp_config_modify(config, kShmErrorHandlingKey, "y"), "enable shared-memory error handling");
  return Status::ok();
}

}  // namespace

Result<UcpContext> createUcpContext(const ContextSpec& spec, spdlog::logger& log) {
  ucp_config_t* raw_config = nullptr;
  PSDP_UCS_CHECK(ucp_config_read(nullptr, nullptr, &raw_config), "read ucx configuration");
  UcpConfig config(raw_config);
  PSDP_RETURN_IF_ERROR(applyShmErrorHandling(config.get(), spec, log));
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
