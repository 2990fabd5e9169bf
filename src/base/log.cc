#include "base/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <map>
#include <mutex>

namespace psdp {
namespace {

// The rank travels in the logger's name (%n), not in the pattern: the pattern belongs to the sink, and
// sinks are shared between the communicators of one process.
constexpr const char* kPattern = "[%H:%M:%S.%f] [%n] [%l] %v";

std::string expandRank(const std::string& path, int rank) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 1 < path.size() && path[i + 1] == 'r') {
      out += rank < 0 ? std::string("-") : std::to_string(rank);
      ++i;
    } else {
      out += path[i];
    }
  }
  return out;
}

// Sinks are shared by path so that several communicators of one process append to one file coherently.
Result<spdlog::sink_ptr> sinkFor(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<spdlog::sinks::sink>> sinks;
  std::lock_guard<std::mutex> lock(mutex);
  if (path.empty()) {
    static spdlog::sink_ptr stderr_sink = [] {
      auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
      sink->set_pattern(kPattern);
      return sink;
    }();
    return stderr_sink;
  }
  if (auto existing = sinks[path].lock()) return existing;
  try {
    spdlog::sink_ptr sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
    sink->set_pattern(kPattern);
    sinks[path] = sink;
    return sink;
  } catch (const std::exception& e) {
    return Status::system("cannot open log file '{}': {}", path, e.what());
  }
}

Logger makeLogger(int rank, const Config& config, spdlog::sink_ptr sink) {
  std::string name = rank < 0 ? std::string("psdp rank -") : "psdp rank " + std::to_string(rank);
  auto logger = std::make_shared<spdlog::logger>(std::move(name), std::move(sink));
  const spdlog::level::level_enum level = toSpdlogLevel(config.log_level);
  logger->set_level(level);
  // Every line that is logged reaches its file at once: a log is read to learn why a process hung or died,
  // and a line still in a buffer then is lost. Only a chosen debug or trace level logs per operation.
  logger->flush_on(std::min(level, spdlog::level::warn));
  return logger;
}

}  // namespace

spdlog::level::level_enum toSpdlogLevel(psdp_log_level_t level) {
  switch (level) {
    case PSDP_LOG_OFF: return spdlog::level::off;
    case PSDP_LOG_ERROR: return spdlog::level::err;
    case PSDP_LOG_WARN: return spdlog::level::warn;
    case PSDP_LOG_INFO: return spdlog::level::info;
    case PSDP_LOG_DEBUG: return spdlog::level::debug;
    case PSDP_LOG_TRACE: return spdlog::level::trace;
    default: return spdlog::level::warn;
  }
}

spdlog::logger& processLog() {
  static Logger logger = [] {
    // A malformed PSDP_* variable is reported by the call that resolves the configuration; the process
    // logger falls back to defaults rather than failing here.
    auto resolved = Config::resolve(nullptr, ProcessEnvironment::instance());
    const Config& config = resolved.isOk() ? resolved.value() : Config::defaults();
    auto sink = sinkFor(expandRank(config.log_file, -1));
    return makeLogger(-1, config, sink.isOk() ? sink.value() : sinkFor("").value());
  }();
  return *logger;
}

Result<Logger> makeRankLogger(int rank, const Config& config) {
  PSDP_ASSIGN_OR_RETURN(spdlog::sink_ptr sink, sinkFor(expandRank(config.log_file, rank)));
  return makeLogger(rank, config, std::move(sink));
}

}  // namespace psdp
