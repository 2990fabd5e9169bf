// psdp-run: starts N local ranks of a command with the environment psdp_comm_init_from_env reads, prefixes
// their output with the rank, and exits with the first failure. A pure launcher: it does not link libpsdp.
// Usage and exit codes: psdp-run --help (text in psdp_run_options.cc).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "psdp_run_job.h"
#include "psdp_run_launcher.h"
#include "psdp_run_options.h"

namespace {

// A launcher started with stdin, stdout or stderr closed would get pipes at those numbers, and dup2 onto the
// same number keeps close-on-exec set, so a rank would lose that stream. Occupy them with /dev/null first.
void ensureStandardFds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0) continue;
    int opened = ::open("/dev/null", O_RDWR);
    if (opened >= 0 && opened != fd) ::close(opened);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace psdp::run;
  ensureStandardFds();
  ParseResult parsed = parseArgs(argc, argv, std::getenv("PSDP_RUN_TIMEOUT"));
  if (parsed.outcome == ParseOutcome::kHelp) {
    printUsage(stdout);
    return 0;
  }
  if (parsed.outcome == ParseOutcome::kError) {
    std::fprintf(stderr, "psdp-run: %s\nTry 'psdp-run --help'.\n", parsed.error.c_str());
    return kExitLauncherError;
  }
  const RunOptions& options = parsed.options;
  int exit_code = kExitLauncherError;
  std::string error;
  std::optional<std::string> program = resolveCommand(options.command[0], std::getenv("PATH"), &exit_code, &error);
  if (!program) {
    std::fprintf(stderr, "psdp-run: %s\n", error.c_str());
    return exit_code;
  }
  JobEnvironment env;
  if (!env.init(environ, &error)) {
    std::fprintf(stderr, "psdp-run: %s\n", error.c_str());
    return kExitLauncherError;
  }
  // Anything buffered in stdio must be out before the ranks' output, which bypasses it.
  std::fflush(nullptr);
  Launcher launcher(options, env, *program);
  return launcher.run();
}
