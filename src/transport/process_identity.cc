#include "transport/process_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <string>

namespace psdp::transport {
namespace {

// "PSPI" and a layout version: an address from another build is refused, not misread.
constexpr uint32_t kMagic = 0x49505350;
constexpr uint32_t kVersion = 1;

bool readBootId(std::array<uint8_t, 16>& out) {
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string text;
  if (!(file >> text)) return false;
  size_t n = 0;
  for (size_t i = 0; i + 1 < text.size() && n < out.size();) {
    if (text[i] == '-') {
      ++i;
      continue;
    }
    if (!std::isxdigit(static_cast<unsigned char>(text[i])) ||
        !std::isxdigit(static_cast<unsigned char>(text[i + 1]))) {
      return false;
    }
    out[n++] = static_cast<uint8_t>(std::stoi(text.substr(i, 2), nullptr, 16));
    i += 2;
  }
  return n == out.size();
}

// Whether /proc names processes by the pids of this process's pid namespace. It does not in a pid namespace
// entered without a /proc of its own (unshare --pid without --mount-proc): /proc/<pid> is then another
// process than the peer with that pid, so a peer's /proc entries must not be used.
bool procMatchesPidNamespace(pid_t pid) {
  char target[32] = {};
  ssize_t n = readlink("/proc/self", target, sizeof(target) - 1);
  return n > 0 && std::to_string(pid) == std::string(target, static_cast<size_t>(n));
}

ProcessIdentity readSelf() {
  ProcessIdentity id;
  id.pid = static_cast<uint32_t>(getpid());
  struct stat ns {};
  // The namespace left unknown makes no peer local: every shortcut through /proc is then off.
  if (procMatchesPidNamespace(getpid()) && stat("/proc/self/ns/pid", &ns) == 0) {
    id.pid_namespace = static_cast<uint64_t>(ns.st_ino);
  }
  if (!readBootId(id.boot_id)) id.boot_id.fill(0);
  return id;
}

template <typename T>
std::byte* put(std::byte* out, const T& value) {
  std::memcpy(out, &value, sizeof(T));
  return out + sizeof(T);
}

template <typename T>
T get(std::span<const std::byte> in, size_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof(T));
  return value;
}

}  // namespace

const ProcessIdentity& ProcessIdentity::self() {
  // Read once: the pid of a forked child differs, but a communicator never crosses a fork.
  static const ProcessIdentity id = readSelf();
  return id;
}

bool ProcessIdentity::isOtherLocalProcess(const ProcessIdentity& other) const {
  static constexpr std::array<uint8_t, 16> kUnknown{};
  return pid != other.pid && pid_namespace != 0 && pid_namespace == other.pid_namespace && boot_id != kUnknown &&
         boot_id == other.boot_id;
}

void ProcessIdentity::encode(std::span<std::byte, kEncodedBytes> out) const {
  std::byte* p = put(out.data(), kMagic);
  p = put(p, kVersion);
  p = put(p, pid);
  p = put(p, uint32_t{0});
  p = put(p, pid_namespace);
  put(p, boot_id);
}

void ProcessIdentity::encode(std::vector<std::byte>& out) const {
  out.resize(out.size() + kEncodedBytes);
  encode(std::span<std::byte, kEncodedBytes>(out.data() + out.size() - kEncodedBytes, kEncodedBytes));
}

Result<ProcessIdentity> ProcessIdentity::decode(std::span<const std::byte> in) {
  if (in.size() < kEncodedBytes) {
    return Status::invalidArgument("process identity of {} bytes, expected at least {}", in.size(), kEncodedBytes);
  }
  if (get<uint32_t>(in, 0) != kMagic || get<uint32_t>(in, 4) != kVersion) {
    return Status::invalidArgument("not a psdp process identity (magic {:#x}, version {})", get<uint32_t>(in, 0),
                                   get<uint32_t>(in, 4));
  }
  ProcessIdentity id;
  id.pid = get<uint32_t>(in, 8);
  id.pid_namespace = get<uint64_t>(in, 16);
  std::memcpy(id.boot_id.data(), in.data() + 24, id.boot_id.size());
  return id;
}

// The state is the field after the command name, which is in parentheses and may itself hold ") ".
bool processIsStopped(uint32_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(file, stat)) return false;
  size_t name_end = stat.rfind(") ");
  if (name_end == std::string::npos || name_end + 2 >= stat.size()) return false;
  const char state = stat[name_end + 2];
  return state == 'T' || state == 't';
}

}  // namespace psdp::transport
