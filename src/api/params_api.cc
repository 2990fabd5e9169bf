// The C boundary for the configuration table (what psdp-info prints).
#include <algorithm>
#include <cstring>
#include <string>

#include "api/guard.h"
#include "api/validate.h"
#include "base/config.h"
#include "base/environment.h"
#include "coll/provider.h"
#include "core/tuning.h"

using psdp::Config;
using psdp::Result;
using psdp::Status;

extern "C" {

PSDP_API int psdp_param_count(void) {
  return static_cast<int>(psdp::params().size());
}

PSDP_API psdp_status_t psdp_param_get(const psdp_config_t* config, int index, psdp_param_info_t* info_p) {
  return psdp::api::guarded(nullptr, [&] {
    auto table = psdp::params();
    if (index < 0 || static_cast<size_t>(index) >= table.size()) {
      return Status::invalidArgument("index {} is outside [0, {})", index, table.size());
    }
    if (info_p == nullptr) return Status::invalidArgument("info_p is NULL");
    PSDP_ASSIGN_OR_RETURN(Config resolved, Config::resolve(config, psdp::ProcessEnvironment::instance()));
    const psdp::ParamSpec& spec = table[index];
    std::string value = spec.format(resolved);
    psdp_param_info_t info{};
    info.name = spec.name;
    info.env = spec.env;
    info.type = spec.type;
    info.default_value = spec.default_value;
    info.help = spec.help;
    info.source = psdp::paramSourceName(resolved.sources[index]);
    std::strncpy(info.value, value.c_str(), sizeof(info.value) - 1);
    *info_p = info;
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_algorithm_table_for(const psdp_config_t* config, const char* signature, char* buf,
                                                size_t* len) {
  return psdp::api::guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(psdp::api::checkTextOut(buf, len));
    const psdp::Environment& env = psdp::ProcessEnvironment::instance();
    PSDP_ASSIGN_OR_RETURN(Config resolved, Config::resolve(config, env));
    PSDP_ASSIGN_OR_RETURN(std::string text,
                          psdp::core::formatAlgorithmTable(resolved, env, signature ? signature : ""));
    psdp::api::copyTextOut(text, buf, len);
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_algorithm_table(const psdp_config_t* config, char* buf, size_t* len) {
  return psdp_algorithm_table_for(config, nullptr, buf, len);
}

PSDP_API psdp_status_t psdp_collective_providers(char* buf, size_t* len) {
  return psdp::api::guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(psdp::api::checkTextOut(buf, len));
    psdp::api::copyTextOut(psdp::coll::formatCollectiveProviders(), buf, len);
    return Status::ok();
  });
}

}  // extern "C"
