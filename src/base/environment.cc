#include "base/environment.h"

#include <cstdlib>

namespace psdp {

std::optional<std::string> ProcessEnvironment::get(const std::string& name) const {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

const ProcessEnvironment& ProcessEnvironment::instance() {
  static const ProcessEnvironment env;
  return env;
}

std::optional<std::string> MapEnvironment::get(const std::string& name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

}  // namespace psdp
