// The resolved, immutable configuration of a communicator, and the one table of parameters behind it.
//
// Every parameter is one row of kParams (config_table.cc): name, environment variable, type, default,
// help, and three small functions (read the caller's psdp_config_t field, parse text, format). That one
// table drives resolution, psdp-info's dump, the README's table and its test. Precedence for each
// parameter: a field the caller set in psdp_config_t > PSDP_* environment > built-in default.
#pragma once

#include <psdp/psdp.h>

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/environment.h"
#include "base/status.h"

namespace psdp {

struct PortRange {
  int lo = 0;  // 0..0 means "any port the kernel picks"
  int hi = 0;
};

enum class ParamSource { kDefault, kEnv, kConfig };
const char* paramSourceName(ParamSource source);
// PSDP_ALGORITHM's name of `algorithm` ("auto", "ring", "rhd", "direct"), or null for a value it has none for.
const char* algorithmName(psdp_algorithm_t algorithm);

struct Config {
  double timeout_s = 0;
  size_t fragment_bytes = 0;
  size_t max_in_flight = 0;
  psdp_log_level_t log_level = PSDP_LOG_WARN;
  std::string log_file;       // empty: stderr
  std::string socket_ifname;  // empty: pick automatically
  PortRange port_range;
  psdp_progress_mode_t progress_mode = PSDP_PROGRESS_THREAD;
  psdp_algorithm_t algorithm = PSDP_ALGORITHM_AUTO;
  std::string algorithms;        // PSDP_ALGORITHMS rule text (coll/algorithm_table.h); empty: the built-in rules
  std::string tuning_file;       // PSDP_TUNING_FILE: a path, "none", or empty (the search path; core/tuning.h)
  std::string host_collectives;  // PSDP_HOST_COLLECTIVES: the provider of host-memory collectives (coll/provider.h)
  bool deterministic = false;
  bool split_share = true;  // splits make teams on the parent's context (core/context.h)
  bool check_calls = true;  // PSDP_CHECK=full: collectives agree their call across ranks (coll/op_header_check.h)
  std::string topo_file;    // empty: discover the live machine
  std::string host_id;      // empty: the hostname
  std::string gpu_bus_id;   // "dddd:bb:dd.f"; empty: CPU-only
  std::string trace_file;   // empty: no trace (base/trace.h)

  // Where each parameter's value came from, indexed like params().
  static constexpr size_t kMaxParams = 32;
  std::array<ParamSource, kMaxParams> sources{};

  // Resolves every parameter. `user` may be null. Errors name the field or the variable that is wrong.
  static Result<Config> resolve(const psdp_config_t* user, const Environment& env);
  // Built-in defaults only (for code that runs before any configuration is known).
  static const Config& defaults();
};

struct ParamSpec {
  const char* name;
  const char* env;
  const char* type;
  const char* default_value;
  const char* help;
  // The text of the caller's field, or nullopt when the field is unset or beyond the caller's struct size.
  std::optional<std::string> (*user_value)(const psdp_config_t& user);
  Status (*parse)(std::string_view text, Config& out);
  std::string (*format)(const Config& in);
  // The variable's former name, still read (with a warning naming `env`) when `env` is not set; or null.
  const char* old_env = nullptr;
};

// The table, in documentation order.
std::span<const ParamSpec> params();

// Parsers shared with other modules (e.g. launcher variables): strict, whole-string, no trailing junk.
Result<double> parseSeconds(std::string_view text);
Result<size_t> parseBytes(std::string_view text);  // "4096", "512K", "1M", "2G" (powers of 1024)
Result<long long> parseInteger(std::string_view text);

}  // namespace psdp
