// Command line of psdp-run: `psdp-run -n N [--timeout S] [--keep-going] [--] CMD ARGS...`.
// Pure parsing, no side effects, so the unit test can drive it with tables of argv.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace psdp::run {

// Exit codes that belong to psdp-run itself rather than to a rank. 125..127 follow timeout(1) and env(1), so a
// script can tell "the launcher could not do its job" from a rank's own small exit codes.
inline constexpr int kExitLauncherError = 125;  // bad usage, or a system call of the launcher failed
inline constexpr int kExitCannotExecute = 126;  // the command exists but cannot be executed
inline constexpr int kExitNotFound = 127;       // the command does not exist
inline constexpr int kExitTimeout = 124;        // --timeout / PSDP_RUN_TIMEOUT expired

// Upper bound on -n: each rank costs the launcher two pipe fds and a pollfd, and a local launcher with more
// ranks than this is a typo, not a job.
inline constexpr int kMaxRanks = 1024;

struct RunOptions {
  int nranks = 0;
  double timeout_s = 0;  // 0: no timeout
  bool keep_going = false;
  std::vector<std::string> command;  // command[0] is the program as the user wrote it
};

enum class ParseOutcome { kRun, kHelp, kError };

struct ParseResult {
  ParseOutcome outcome = ParseOutcome::kError;
  RunOptions options;  // valid when outcome == kRun
  std::string error;   // when outcome == kError: one line, without the "psdp-run: " prefix
};

// Parses argv. Options stop at "--" or at the first argument that is not an option; everything from there on
// is the command. env_timeout is PSDP_RUN_TIMEOUT (may be null); --timeout overrides it.
ParseResult parseArgs(int argc, const char* const* argv, const char* env_timeout);

// Writes the --help text.
void printUsage(std::FILE* out);

}  // namespace psdp::run
