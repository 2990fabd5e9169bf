#include "psdp_run_job.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/raii.h"
#include "psdp_run_options.h"

namespace psdp::run {
namespace {

constexpr std::string_view kOwnedVariables[] = {
    "PSDP_RANK",      "PSDP_WORLD_SIZE", "PSDP_LOCAL_RANK", "PSDP_LOCAL_WORLD_SIZE",
    "PSDP_ROOT_ADDR", "PSDP_JOB_SECRET", "PSDP_ROOT_FD"};
constexpr size_t kSecretBytes = 16;  // 32 hex digits, the format the bootstrap expects

std::string errnoText(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

std::string_view variableName(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

// getrandom with flags 0 blocks only until the kernel's pool is first seeded, and returns short only when a
// signal interrupts it; loop for both.
bool fillRandom(unsigned char* buf, size_t len, std::string* error) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::getrandom(buf + done, len - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = errnoText("getrandom");
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

bool makeSecret(std::string* secret, std::string* error) {
  unsigned char bytes[kSecretBytes];
  if (!fillRandom(bytes, sizeof(bytes), error)) return false;
  static constexpr char kHex[] = "0123456789abcdef";
  secret->clear();
  for (unsigned char b : bytes) {
    secret->push_back(kHex[b >> 4]);
    secret->push_back(kHex[b & 0xf]);
  }
  return true;
}

// Binds a TCP socket to 127.0.0.1:port (0: any free port) and listens on it; returns the bound port with
// the socket in *listener, 0 when that port is taken, -1 on any other error.
int listenOnLoopback(uint16_t port, UniqueFd* listener, std::string* error) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    *error = errnoText("socket");
    return -1;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno == EADDRINUSE || errno == EACCES) return 0;
    *error = errnoText("bind 127.0.0.1");
    return -1;
  }
  // Listening before the ranks start lets ranks that connect early wait in the backlog until rank 0 accepts.
  if (::listen(fd.get(), SOMAXCONN) != 0) {
    if (errno == EADDRINUSE) return 0;  // port 0: the kernel found no free port to bind implicitly
    *error = errnoText("listen");
    return -1;
  }
  socklen_t len = sizeof(addr);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    *error = errnoText("getsockname");
    return -1;
  }
  *listener = std::move(fd);
  return ntohs(addr.sin_port);
}

// Binds the socket rank 0 will listen on and keeps it: rank 0 inherits it (PSDP_ROOT_FD), so no other
// process can take the port in between, as could happen if the port were probed and released. With
// PSDP_PORT_RANGE the search starts at a random port of the range, so concurrent jobs (ctest -j) rarely
// probe the same ports in the same order.
bool bindRootListener(const char* port_range, std::string* addr, UniqueFd* listener, std::string* error) {
  if (port_range == nullptr || port_range[0] == '\0') {
    int port = listenOnLoopback(0, listener, error);
    if (port == 0) *error = "no free ephemeral port on 127.0.0.1";
    if (port <= 0) return false;
    *addr = "127.0.0.1:" + std::to_string(port);
    return true;
  }
  uint16_t lo = 0;
  uint16_t hi = 0;
  if (!parsePortRange(port_range, &lo, &hi)) {
    *error = std::string("PSDP_PORT_RANGE: '") + port_range + "' is not lo-hi with 1 <= lo <= hi <= 65535";
    return false;
  }
  uint32_t span = static_cast<uint32_t>(hi - lo) + 1;
  uint32_t start = 0;
  if (!fillRandom(reinterpret_cast<unsigned char*>(&start), sizeof(start), error)) return false;
  for (uint32_t i = 0; i < span; ++i) {
    auto port = static_cast<uint16_t>(lo + (start + i) % span);
    int bound = listenOnLoopback(port, listener, error);
    if (bound < 0) return false;
    if (bound > 0) {
      *addr = "127.0.0.1:" + std::to_string(bound);
      return true;
    }
  }
  *error = std::string("no free port on 127.0.0.1 in PSDP_PORT_RANGE=") + port_range;
  return false;
}

enum class FileKind { kMissing, kDirectory, kNotExecutable, kExecutable };

FileKind classifyFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return FileKind::kMissing;
  if (S_ISDIR(st.st_mode)) return FileKind::kDirectory;
  return S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0 ? FileKind::kExecutable : FileKind::kNotExecutable;
}

}  // namespace

bool JobEnvironment::init(const char* const* env, std::string* error) {
  const char* user_root = nullptr;
  const char* user_secret = nullptr;
  const char* port_range = nullptr;
  for (const char* const* e = env; *e != nullptr; ++e) {
    std::string_view entry = *e;
    std::string_view name = variableName(entry);
    const char* value = *e + std::min(name.size() + 1, entry.size());
    if (name == "PSDP_ROOT_ADDR") user_root = value;
    if (name == "PSDP_JOB_SECRET") user_secret = value;
    if (name == "PSDP_PORT_RANGE") port_range = value;
    bool owned = false;
    for (std::string_view owned_name : kOwnedVariables) owned = owned || name == owned_name;
    if (!owned) inherited_.emplace_back(entry);
  }
  if (user_root != nullptr && user_root[0] != '\0') {
    root_addr_ = user_root;  // the user chose where rank 0 listens (e.g. a fixed port a firewall allows)
  } else if (!bindRootListener(port_range, &root_addr_, &root_listener_, error)) {
    return false;
  }
  if (user_secret != nullptr && user_secret[0] != '\0') {
    secret_ = user_secret;  // lets the user attach another process to the job on purpose
    return true;
  }
  return makeSecret(&secret_, error);
}

std::vector<std::string> JobEnvironment::forRank(int rank, int nranks) const {
  std::vector<std::string> out = inherited_;
  out.push_back("PSDP_RANK=" + std::to_string(rank));
  out.push_back("PSDP_WORLD_SIZE=" + std::to_string(nranks));
  // All ranks of psdp-run run on this host, so the local values equal the global ones.
  out.push_back("PSDP_LOCAL_RANK=" + std::to_string(rank));
  out.push_back("PSDP_LOCAL_WORLD_SIZE=" + std::to_string(nranks));
  out.push_back("PSDP_ROOT_ADDR=" + root_addr_);
  out.push_back("PSDP_JOB_SECRET=" + secret_);
  if (rank == 0 && root_listener_.valid()) out.push_back("PSDP_ROOT_FD=" + std::to_string(root_listener_.get()));
  return out;
}

bool parsePortRange(std::string_view text, uint16_t* lo, uint16_t* hi) {
  auto parse = [](std::string_view part, uint16_t* port) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size()) return false;
    if (value < 1 || value > 65535) return false;
    *port = static_cast<uint16_t>(value);
    return true;
  };
  size_t dash = text.find('-');
  std::string_view first = text.substr(0, dash);
  std::string_view second = dash == std::string_view::npos ? first : text.substr(dash + 1);
  return parse(first, lo) && parse(second, hi) && *lo <= *hi;
}

std::optional<std::string> resolveCommand(const std::string& command, const char* path_env, int* exit_code,
                                          std::string* error) {
  if (command.find('/') != std::string::npos) {
    FileKind kind = classifyFile(command);
    if (kind == FileKind::kExecutable) return command;
    *exit_code = kind == FileKind::kMissing ? kExitNotFound : kExitCannotExecute;
    const char* why = kind == FileKind::kMissing     ? "no such file"
                      : kind == FileKind::kDirectory ? "is a directory"
                                                     : "not an executable file";
    *error = "cannot execute '" + command + "': " + why;
    return std::nullopt;
  }
  std::string_view dirs = (path_env != nullptr && path_env[0] != '\0') ? path_env : "/usr/local/bin:/usr/bin:/bin";
  bool found_unexecutable = false;
  while (!command.empty()) {
    size_t colon = dirs.find(':');
    std::string_view dir = dirs.substr(0, colon);
    // An empty PATH entry means the current directory, as for execvp; directories are skipped, as there.
    std::string candidate = dir.empty() ? command : std::string(dir) + "/" + command;
    FileKind kind = classifyFile(candidate);
    if (kind == FileKind::kExecutable) return candidate;
    found_unexecutable = found_unexecutable || kind == FileKind::kNotExecutable;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  *exit_code = found_unexecutable ? kExitCannotExecute : kExitNotFound;
  *error = found_unexecutable ? "cannot execute '" + command + "': found in PATH but not an executable file"
                              : "command not found: '" + command + "'";
  return std::nullopt;
}

}  // namespace psdp::run
