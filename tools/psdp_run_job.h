// What every rank of a psdp-run job shares: the program to execute and the environment (rendezvous address,
// job secret, rank variables). Built once, before any rank starts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/raii.h"

namespace psdp::run {

// The environment of the ranks: the launcher's own, minus the variables psdp-run sets, plus those.
class JobEnvironment {
 public:
  // Reads `env` (a null-terminated "NAME=value" array, e.g. environ). Keeps an exported PSDP_ROOT_ADDR and
  // PSDP_JOB_SECRET; otherwise binds a listening socket to a free port on 127.0.0.1 (inside PSDP_PORT_RANGE
  // if set) for rank 0 and draws a secret from getrandom. Returns false with *error set when no port is free
  // or a system call fails.
  [[nodiscard]] bool init(const char* const* env, std::string* error);

  // "NAME=value" entries for one rank: the inherited ones plus PSDP_RANK, PSDP_WORLD_SIZE, PSDP_LOCAL_RANK,
  // PSDP_LOCAL_WORLD_SIZE, PSDP_ROOT_ADDR and PSDP_JOB_SECRET; for rank 0 also PSDP_ROOT_FD when
  // rootListenerFd() is open.
  std::vector<std::string> forRank(int rank, int nranks) const;

  const std::string& rootAddr() const { return root_addr_; }
  // The socket bound to rootAddr(), which rank 0 inherits (close-on-exec is cleared in its child only), so
  // that no other process can take the port between choosing it and rank 0 listening; -1 when the user
  // chose PSDP_ROOT_ADDR. The launcher closes its copy once rank 0 has started.
  int rootListenerFd() const { return root_listener_.get(); }
  void closeRootListener() { root_listener_.reset(); }

 private:
  std::vector<std::string> inherited_;
  std::string root_addr_;
  UniqueFd root_listener_;
  std::string secret_;  // never logged: anyone holding it can join the job's rendezvous
};

// "lo-hi" with 1 <= lo <= hi <= 65535; a single port "p" means "p-p".
[[nodiscard]] bool parsePortRange(std::string_view text, uint16_t* lo, uint16_t* hi);

// The path execve should run for `command`, searched like execvp: as given when it contains a '/', else in
// each directory of path_env (null or empty: "/usr/local/bin:/usr/bin:/bin"). Resolving it before starting
// any rank turns a typo into one clear message instead of N exec failures. On failure sets *exit_code to
// kExitNotFound or kExitCannotExecute and *error to a message naming the command.
std::optional<std::string> resolveCommand(const std::string& command, const char* path_env, int* exit_code,
                                          std::string* error);

}  // namespace psdp::run
