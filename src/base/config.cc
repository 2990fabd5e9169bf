#include "base/config.h"

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "base/log.h"

namespace psdp {

const char* paramSourceName(ParamSource source) {
  switch (source) {
    case ParamSource::kDefault: return "default";
    case ParamSource::kEnv: return "env";
    case ParamSource::kConfig: return "config";
  }
  return "?";
}

const char* algorithmName(psdp_algorithm_t algorithm) {
  switch (algorithm) {
    case PSDP_ALGORITHM_AUTO: return "auto";
    case PSDP_ALGORITHM_RING: return "ring";
    case PSDP_ALGORITHM_RHD: return "rhd";
    case PSDP_ALGORITHM_DIRECT: return "direct";
    default: return nullptr;
  }
}

Result<long long> parseInteger(std::string_view text) {
  std::string s(text);
  if (s.empty()) return Status::invalidArgument("empty integer");
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return Status::invalidArgument("'{}' is not an integer", text);
  return v;
}

Result<double> parseSeconds(std::string_view text) {
  std::string s(text);
  if (s.empty()) return Status::invalidArgument("empty number");
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || v != v) {
    return Status::invalidArgument("'{}' is not a number of seconds", text);
  }
  return v;
}

Result<size_t> parseBytes(std::string_view text) {
  if (text.empty()) return Status::invalidArgument("empty size");
  unsigned shift = 0;
  switch (text.back()) {
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    default: break;
  }
  std::string_view digits = shift ? text.substr(0, text.size() - 1) : text;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return Status::invalidArgument("'{}' is not a size (digits with an optional K, M or G)", text);
  }
  auto v = parseInteger(digits);
  if (!v.isOk()) return v.status();
  unsigned long long value = static_cast<unsigned long long>(v.value());
  if (shift && value > (~0ull >> shift)) return Status::invalidArgument("size '{}' overflows", text);
  return static_cast<size_t>(value << shift);
}

namespace {

// Once per process and variable: configurations are resolved at every init, split and psdp-info call.
void warnRenamed(const ParamSpec& p, bool ignored) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard lock(mutex);
  if (!warned.insert(p.old_env).second) return;
  if (ignored) {
    processLog().warn("{} is ignored: it was renamed {}, which is set too", p.old_env, p.env);
  } else {
    processLog().warn("{} was renamed {}: set that instead (the old name will stop working)", p.old_env, p.env);
  }
}

}  // namespace

Result<Config> Config::resolve(const psdp_config_t* user, const Environment& env) {
  if (user != nullptr) {
    if (user->magic != PSDP_CONFIG_MAGIC) {
      return Status::invalidArgument(
          "config: magic is {:#x}, not PSDP_CONFIG_MAGIC: initialise it with "
          "PSDP_CONFIG_INITIALIZER",
          user->magic);
    }
    if (user->size < offsetof(psdp_config_t, timeout_s)) {
      return Status::invalidArgument("config: size {} is too small for a psdp_config_t", user->size);
    }
  }
  Config config;
  auto table = params();
  for (size_t i = 0; i < table.size(); ++i) {
    const ParamSpec& p = table[i];
    std::optional<std::string> text;
    ParamSource source = ParamSource::kDefault;
    const char* variable = p.env;  // the one read, named by a parse error
    if (user != nullptr && (text = p.user_value(*user))) {
      source = ParamSource::kConfig;
    } else if ((text = env.get(p.env))) {
      source = ParamSource::kEnv;
      if (p.old_env != nullptr && env.get(p.old_env)) warnRenamed(p, /*ignored=*/true);
    } else if (p.old_env != nullptr && (text = env.get(p.old_env))) {
      source = ParamSource::kEnv;
      variable = p.old_env;
      warnRenamed(p, /*ignored=*/false);
    } else {
      text = p.default_value;
    }
    Status s = p.parse(*text, config);
    if (!s.isOk()) {
      return s.withContext(source == ParamSource::kConfig ? fmt::format("config field for {}", p.env)
                                                          : std::string(variable));
    }
    config.sources[i] = source;
  }
  return config;
}

const Config& Config::defaults() {
  static const Config config = Config::resolve(nullptr, MapEnvironment()).value();
  return config;
}

}  // namespace psdp
