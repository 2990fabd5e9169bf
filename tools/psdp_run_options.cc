#include "psdp_run_options.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>

namespace psdp::run {
namespace {

// Far beyond any real job, and small enough that steady_clock::now() + timeout cannot overflow.
constexpr double kMaxTimeoutS = 1e7;

// from_chars rather than strtol/strtod: no leading blanks, no '+', no locale, and the whole text must be used.
std::optional<int> parseRankCount(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < 1 || value > kMaxRanks) return std::nullopt;
  return value;
}

std::optional<double> parseSeconds(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (!std::isfinite(value) || value < 0 || value > kMaxTimeoutS) return std::nullopt;
  return value;
}

ParseResult fail(std::string message) {
  ParseResult result;
  result.outcome = ParseOutcome::kError;
  result.error = std::move(message);
  return result;
}

// One option that takes a value, in any of its spellings: "-n 4", "-n4", "--nranks 4", "--nranks=4",
// "--timeout 2", "--timeout=2". Returns false when arg is not such an option.
struct ValueOption {
  std::string_view name;   // canonical name for messages: "-n" or "--timeout"
  std::string_view value;  // empty with missing == true when the value is absent
  bool missing = false;
};

bool matchValueOption(int argc, const char* const* argv, int* index, ValueOption* out) {
  std::string_view arg = argv[*index];
  std::string_view name;
  if (arg.starts_with("-n") || arg == "--nranks" || arg.starts_with("--nranks=")) {
    name = "-n";
  } else if (arg == "--timeout" || arg.starts_with("--timeout=")) {
    name = "--timeout";
  } else {
    return false;
  }
  out->name = name;
  if (arg == "-n" || arg == "--nranks" || arg == "--timeout") {
    out->missing = *index + 1 >= argc;
    if (!out->missing) out->value = argv[++*index];
  } else {
    size_t eq = arg.find('=');
    out->value = arg.starts_with("--") ? arg.substr(eq + 1) : arg.substr(2);
  }
  return true;
}

// Applies the value of -n or --timeout to options; returns an error message, empty on success.
std::string applyValueOption(const ValueOption& option, RunOptions* options, bool* timeout_given) {
  std::string quoted = "'" + std::string(option.value) + "'";
  if (option.missing) return std::string(option.name) + " needs a value";
  if (option.name == "-n") {
    std::optional<int> n = parseRankCount(option.value);
    if (!n) return "-n: " + quoted + " is not a number of ranks between 1 and " + std::to_string(kMaxRanks);
    options->nranks = *n;
    return {};
  }
  std::optional<double> seconds = parseSeconds(option.value);
  if (!seconds) return "--timeout: " + quoted + " is not a number of seconds (0 means no timeout)";
  options->timeout_s = *seconds;
  *timeout_given = true;
  return {};
}

}  // namespace

ParseResult parseArgs(int argc, const char* const* argv, const char* env_timeout) {
  ParseResult result;
  RunOptions& options = result.options;
  bool timeout_given = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    // A lone "-" or anything without a dash starts the command; options after it belong to the command.
    if (arg.size() < 2 || arg[0] != '-') break;
    if (arg == "-h" || arg == "--help") {
      result.outcome = ParseOutcome::kHelp;
      return result;
    }
    if (arg == "--keep-going") {
      options.keep_going = true;
      continue;
    }
    ValueOption option;
    if (!matchValueOption(argc, argv, &i, &option)) return fail("unknown option '" + std::string(arg) + "'");
    std::string error = applyValueOption(option, &options, &timeout_given);
    if (!error.empty()) return fail(std::move(error));
  }
  for (; i < argc; ++i) options.command.emplace_back(argv[i]);

  if (options.nranks == 0) return fail("missing -n N, the number of ranks to start");
  if (options.command.empty()) return fail("missing the command to run");
  if (!timeout_given && env_timeout != nullptr && env_timeout[0] != '\0') {
    std::optional<double> seconds = parseSeconds(env_timeout);
    if (!seconds) return fail("PSDP_RUN_TIMEOUT: '" + std::string(env_timeout) + "' is not a number of seconds");
    options.timeout_s = *seconds;
  }
  result.outcome = ParseOutcome::kRun;
  return result;
}

void printUsage(std::FILE* out) {
  std::fputs(
      "Usage: psdp-run -n N [--timeout S] [--keep-going] [--] CMD [ARGS...]\n"
      "Starts N local ranks of CMD and waits for them.\n"
      "\n"
      "Options:\n"
      "  -n, --nranks N   number of ranks to start (1..1024)\n"
      "  --timeout S      kill every rank and exit 124 after S seconds (decimals allowed; 0: no timeout;\n"
      "                   default: PSDP_RUN_TIMEOUT, else none)\n"
      "  --keep-going     when a rank fails, let the others finish on their own instead of killing them\n"
      "  -h, --help       print this help\n"
      "Options end at '--' or at the first argument that is not an option.\n"
      "\n"
      "Each rank gets stdin from /dev/null and this environment:\n"
      "  PSDP_RANK, PSDP_WORLD_SIZE, PSDP_LOCAL_RANK, PSDP_LOCAL_WORLD_SIZE\n"
      "  PSDP_ROOT_ADDR   127.0.0.1:<free port> where rank 0 serves the rendezvous; an exported value is kept,\n"
      "                   and PSDP_PORT_RANGE=lo-hi, if set, limits the ports picked\n"
      "  PSDP_JOB_SECRET  32 hex digits, fresh per job (an exported value is kept); never printed\n"
      "Every line a rank writes is prefixed with \"[<rank>] \" and goes to the stream it was written to.\n"
      "\n"
      "Exit status: the first non-zero exit code among the ranks (128+s for a rank killed by signal s), else 0;\n"
      "  124  the timeout expired        126  CMD cannot be executed\n"
      "  125  usage or launcher error    127  CMD not found\n"
      "When a rank fails, the others get SIGTERM, then SIGKILL 2 s later (unless --keep-going).\n"
      "SIGINT, SIGTERM, SIGHUP and SIGQUIT are forwarded to the ranks; psdp-run then exits 128+signal.\n"
      "Each rank runs in its own process group and dies with psdp-run; processes a rank leaves behind get\n"
      "SIGTERM when it exits, then SIGKILL 2 s later.\n",
      out);
}

}  // namespace psdp::run
