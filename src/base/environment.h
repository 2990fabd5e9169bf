// Read access to environment variables. The only place in psdp that calls getenv is ProcessEnvironment, so
// tests can resolve configuration and launcher variables from a map instead of calling setenv.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace psdp {

class Environment {
 public:
  virtual ~Environment() = default;
  // The value, or nullopt when the variable is not set. An empty value counts as set.
  virtual std::optional<std::string> get(const std::string& name) const = 0;
};

// The real process environment.
class ProcessEnvironment final : public Environment {
 public:
  std::optional<std::string> get(const std::string& name) const override;
  // A shared instance; reading the environment has no state.
  static const ProcessEnvironment& instance();
};

// A fixed set of variables, for tests and for layering one source over another.
class MapEnvironment final : public Environment {
 public:
  MapEnvironment() = default;
  explicit MapEnvironment(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {}
  std::optional<std::string> get(const std::string& name) const override;
  void set(const std::string& name, const std::string& value) { vars_[name] = value; }

 private:
  std::map<std::string, std::string> vars_;
};

}  // namespace psdp
