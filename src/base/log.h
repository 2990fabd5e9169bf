// Logging through spdlog. Every line names the rank ("[psdp rank 3]", "[psdp rank -]" before a
// communicator exists), so the interleaved output of many ranks stays readable. Messages follow UCX's
// LoggingStyle: lowercase, "peer %d" rather than "peer=%d".
#pragma once

#include <spdlog/logger.h>

#include <memory>

#include "base/config.h"
#include "base/status.h"

namespace psdp {

using Logger = std::shared_ptr<spdlog::logger>;

// The process-wide logger for code that runs outside a communicator. Its level and file come from
// PSDP_LOG_LEVEL / PSDP_LOG_FILE, read once on first use.
spdlog::logger& processLog();

// A logger for one rank of one communicator. PSDP_LOG_FILE's "%r" is replaced by the rank; ranks that
// resolve to the same path share one file sink. Errors: the file cannot be opened.
Result<Logger> makeRankLogger(int rank, const Config& config);

spdlog::level::level_enum toSpdlogLevel(psdp_log_level_t level);

}  // namespace psdp
