// Hostile peers around real jobs formed by real processes under torchrun-style variables (MASTER_ADDR, no
// PSDP_ROOT_ADDR: rank 0's root takes the first free port of PSDP_PORT_RANGE and the others scan it):
//
//   squatter  a listener on the lowest port of the range that answers like a psdp root (it knows the wire
//             format, not the secret). Every rank but 0 (which runs the root and knows its port) reaches it
//             first. It must receive only the rank's challenge
//             (16 header bytes and a 16-byte random nonce): neither the explicit PSDP_JOB_SECRET nor anything
//             computed from it, which would allow an offline guess. Each rank warns about it, naming it.
//   intruder  a client without the secret that finds the real root while rank 0 waits in it, ignores the
//             root's proof and sends a hello for rank 1 with a made-up MAC: it takes no rank, the root logs
//             it at warning level, and the job forms when the other ranks come.
//   relay     a man in the middle between rank 1 and the real root, which passes the handshake through and
//             alters one byte of the table: rank 1 fails naming the address it got the table from.
//
// The hostile parts speak the wire format by hand (the bytes of src/core/bootstrap_protocol.h), as an
// attacker would; they use nothing of psdp. The ranks are this program too, forked here with the variables
// torchrun would set. Usage: mp_hostile_peers RUNS (RUNS jobs with the squatter and the intruder, then one
// through the relay).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <psdp/psdp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mp_report.h"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;

constexpr int kWorld = 3;
constexpr int kRangeWidth = 64;
constexpr double kRankTimeoutS = 20;
// The wire format, as an outsider reads it off the protocol's header comment.
constexpr uint32_t kMagic = 0x50534442;
constexpr uint16_t kVersion = 2;
constexpr uint16_t kServerHello = 1, kHello = 2, kTable = 4, kChallenge = 6, kRootProof = 7;
constexpr size_t kHeaderBytes = 16, kNonceBytes = 16, kMacBytes = 32;

// ---- the ranks ------------------------------------------------------------------------------------------

// A rank: init from the environment, one all-reduce, and the outcome in RESULT_FILE ("ok", or the error).
int rankMain(const char* result_file) {
  psdp_comm_h comm = nullptr;
  psdp_status_t s = psdp_comm_init_from_env(nullptr, &comm);
  std::string outcome = s == PSDP_SUCCESS ? "ok" : psdp_get_last_error(nullptr);
  if (s == PSDP_SUCCESS) {
    int rank = -1, nranks = 0;
    psdp_comm_rank(comm, &rank);
    psdp_comm_size(comm, &nranks);
    int32_t x = rank + 1;
    s = psdp_all_reduce(&x, &x, 1, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
    if (s != PSDP_SUCCESS) outcome = psdp_get_last_error(comm);
    if (s == PSDP_SUCCESS && x != nranks * (nranks + 1) / 2) outcome = "all-reduce gave " + std::to_string(x);
    psdp_comm_destroy(comm);
  }
  std::ofstream(result_file) << outcome;
  return outcome == "ok" ? 0 : 1;
}

// ---- plumbing -------------------------------------------------------------------------------------------

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string randomHex(std::mt19937_64& rng, size_t digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < digits; ++i) out += kDigits[rng() % 16];
  return out;
}

Bytes randomBytes(size_t n) {
  static std::random_device device;
  Bytes out(n);
  for (auto& b : out) b = static_cast<uint8_t>(device());
  return out;
}

Bytes header(uint16_t type, uint64_t body) {
  Bytes out;
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<uint8_t>(kMagic >> (8 * i)));
  out.push_back(kVersion >> 8);
  out.push_back(kVersion & 0xff);
  out.push_back(static_cast<uint8_t>(type >> 8));
  out.push_back(static_cast<uint8_t>(type));
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<uint8_t>(body >> (8 * i)));
  return out;
}

Bytes frame(uint16_t type, const Bytes& body) {
  Bytes out = header(type, body.size());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

// A blocking TCP socket with a deadline on every read and write (poll before each).
class Conn {
 public:
  explicit Conn(int fd = -1) : fd_(fd) {}
  Conn(Conn&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Conn& operator=(Conn&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Conn() {
    if (fd_ >= 0) close(fd_);
  }
  static Conn dial(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd);
      return Conn();
    }
    return Conn(fd);
  }
  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  bool wait(short events, double seconds) const {
    pollfd p{fd_, events, 0};
    return poll(&p, 1, static_cast<int>(seconds * 1000)) == 1;
  }
  bool send(const Bytes& bytes) const {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  // Exactly n bytes, or nullopt on close, error or timeout.
  std::optional<Bytes> read(size_t n, double seconds) const {
    Bytes out(n);
    size_t done = 0;
    while (done < n) {
      if (!wait(POLLIN, seconds)) return std::nullopt;
      ssize_t got = ::recv(fd_, out.data() + done, n - done, 0);
      if (got <= 0) return std::nullopt;
      done += static_cast<size_t>(got);
    }
    return out;
  }
  // Everything until the peer closes (or `seconds` of silence).
  Bytes drain(double seconds) const {
    Bytes out;
    uint8_t buf[4096];
    while (wait(POLLIN, seconds)) {
      ssize_t got = ::recv(fd_, buf, sizeof(buf), 0);
      if (got <= 0) break;
      out.insert(out.end(), buf, buf + got);
    }
    return out;
  }
  // One frame: its type and the whole frame's bytes.
  std::optional<std::pair<uint16_t, Bytes>> readFrame(double seconds) const {
    auto head = read(kHeaderBytes, seconds);
    if (!head) return std::nullopt;
    uint64_t body = 0;
    for (size_t i = 8; i < 16; ++i) body = (body << 8) | (*head)[i];
    if (body > (1u << 24)) return std::nullopt;
    auto rest = read(body, seconds);
    if (!rest) return std::nullopt;
    head->insert(head->end(), rest->begin(), rest->end());
    return std::make_pair(static_cast<uint16_t>(((*head)[6] << 8) | (*head)[7]), *head);
  }

 private:
  int fd_;
};

Conn listenLoopback(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 64) != 0) {
    close(fd);
    return Conn();
  }
  return Conn(fd);
}

uint16_t portOf(const Conn& c) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getsockname(c.fd(), reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

Conn acceptWithin(const Conn& listener, double seconds) {
  if (!listener.wait(POLLIN, seconds)) return Conn();
  return Conn(accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
}

// A rank process: this program in rank mode, with a launcher's environment.
struct Rank {
  pid_t pid = -1;
  fs::path result;
};

Rank spawnRank(const std::string& self, int rank, int world,
               const std::vector<std::pair<std::string, std::string>>& env, const fs::path& dir) {
  Rank r;
  r.result = dir / ("result_" + std::to_string(rank) + ".txt");
  pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
    setenv("PSDP_LOG_FILE", (dir / "rank_%r.log").c_str(), 1);
    execl(self.c_str(), self.c_str(), "--rank", r.result.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  r.pid = pid;
  return r;
}

// Waits for the rank to exit, at most `seconds` (then kills it); returns its exit code, or -signal.
int reap(const Rank& r, double seconds) {
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, r.pid, 0));
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(seconds * 1000)) != 1) kill(r.pid, SIGKILL);
    close(pidfd);
  }
  int status = 0;
  while (waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

std::vector<std::pair<std::string, std::string>> torchrunEnv(const std::string& job, const std::string& secret_hex,
                                                             uint16_t lo, double timeout_s) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"},  // torchrun's store; psdp never uses it
      {"TORCHELASTIC_RUN_ID", job}, {"PSDP_JOB_SECRET", secret_hex},
      {"PSDP_SOCKET_IFNAME", "lo"}, {"PSDP_TIMEOUT", std::to_string(timeout_s)},
      {"PSDP_LOG_LEVEL", "warn"}};
  if (lo != 0) env.push_back({"PSDP_PORT_RANGE", std::to_string(lo) + "-" + std::to_string(lo + kRangeWidth - 1)});
  return env;
}

// Every form of the secret an attacker could use, and each half of it: none may reach the squatter.
std::vector<Bytes> secretForms(const std::string& hex) {
  Bytes raw;
  for (size_t i = 0; i < hex.size(); i += 2)
    raw.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  std::vector<Bytes> forms = {raw, Bytes(hex.begin(), hex.end()), Bytes(upper.begin(), upper.end())};
  forms.push_back(Bytes(raw.begin(), raw.begin() + 8));
  forms.push_back(Bytes(raw.begin() + 8, raw.end()));
  return forms;
}

bool contains(const Bytes& haystack, const Bytes& needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) != haystack.end();
}

// ---- the hostile parts ----------------------------------------------------------------------------------

// Answers every connection like a root, with a proof it cannot make right, and records what it hears.
struct Squatter {
  Conn listener;
  std::vector<Bytes> heard;  // per connection, every byte after our server hello
  void serve(int visits, double seconds) {
    const auto start = Clock::now();
    while (static_cast<int>(heard.size()) < visits && since(start) < seconds) {
      Conn c = acceptWithin(listener, seconds - since(start));
      if (!c.valid()) continue;
      c.send(frame(kServerHello, randomBytes(kNonceBytes)));
      Bytes got;
      if (auto challenge = c.read(kHeaderBytes + kNonceBytes, 5)) {
        got = *challenge;
        c.send(frame(kRootProof, randomBytes(kMacBytes)));
      }
      Bytes rest = c.drain(5);
      got.insert(got.end(), rest.begin(), rest.end());
      heard.push_back(std::move(got));
    }
  }
};

// Finds the real root in [lo + 1, lo + width) (the squatter holds lo) and sends it a hello sealed with a
// made-up MAC. True once the root closed on it.
bool intrude(uint16_t lo, double seconds) {
  const auto start = Clock::now();
  while (since(start) < seconds) {
    for (uint16_t port = lo + 1; port < lo + kRangeWidth; ++port) {
      Conn c = Conn::dial(port);
      if (!c.valid()) continue;
      auto hello = c.readFrame(1);
      if (!hello || hello->first != kServerHello) continue;
      c.send(frame(kChallenge, randomBytes(kNonceBytes)));
      auto proof = c.readFrame(1);
      if (!proof || proof->first != kRootProof) continue;
      Bytes body = randomBytes(kMacBytes);  // the MAC it cannot compute
      for (uint32_t field : {1u, static_cast<uint32_t>(kWorld), 5000u, 0u}) {
        for (int i = 3; i >= 0; --i) body.push_back(static_cast<uint8_t>(field >> (8 * i)));
      }
      c.send(frame(kHello, body));
      c.drain(5);
      return true;
    }
    // The root is not listening yet: rank 0 is still starting.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// One job with the squatter on the range's lowest port and the intruder turned away while rank 0 waits.
void squatterRun(int run, const std::string& self, const fs::path& dir, std::mt19937_64& rng, psdp::mp::Report& report,
                 int& leaks) {
  Squatter squatter{listenLoopback(0), {}};
  const uint16_t lo = portOf(squatter.listener);
  const std::string secret = randomHex(rng, 32);
  const fs::path run_dir = dir / ("run" + std::to_string(run));
  fs::create_directories(run_dir);
  auto env = torchrunEnv("hostile-" + randomHex(rng, 8), secret, lo, kRankTimeoutS);
  constexpr int kScanning = kWorld - 1;  // rank 0 runs the root and knows its port
  std::thread squat([&] { squatter.serve(kScanning, kRankTimeoutS); });
  std::vector<Rank> ranks = {spawnRank(self, 0, kWorld, env, run_dir)};
  const bool intruded = intrude(lo, 10);
  for (int r = 1; r < kWorld; ++r) ranks.push_back(spawnRank(self, r, kWorld, env, run_dir));
  const std::string where = "run " + std::to_string(run) + ": ";
  for (int r = 0; r < kWorld; ++r) {
    const int code = reap(ranks[r], kRankTimeoutS + 5);
    report.check(code == 0, where + "rank " + std::to_string(r) + " exited " + std::to_string(code) + ": " +
                                readFile(ranks[r].result));
  }
  squat.join();
  report.check(intruded, where + "the intruder never found the real root");
  report.check(squatter.heard.size() == kScanning,
               where + std::to_string(squatter.heard.size()) + " ranks visited the squatter");
  for (const Bytes& bytes : squatter.heard) {
    const bool only_challenge = bytes.size() == kHeaderBytes + kNonceBytes && bytes[7] == kChallenge;
    report.check(only_challenge,
                 where + "the squatter heard " + std::to_string(bytes.size()) + " bytes, not one challenge");
    for (const Bytes& form : secretForms(secret)) {
      if (contains(bytes, form)) ++leaks;
    }
  }
  std::string logs;
  for (const auto& entry : fs::directory_iterator(run_dir)) {
    if (entry.path().extension() == ".log") logs += readFile(entry.path());
  }
  const std::string squat_addr = "127.0.0.1:" + std::to_string(lo);
  size_t named = 0;
  for (size_t at = logs.find(squat_addr + " could not prove"); at != std::string::npos;
       at = logs.find(squat_addr + " could not prove", at + 1)) {
    ++named;
  }
  report.check(named == kScanning, where + "the squatter was named in " + std::to_string(named) + " warnings, not " +
                                       std::to_string(kScanning) + "\n" + logs);
  report.check(
      logs.find("[warning] bootstrap root") != std::string::npos && logs.find("wrong job secret") != std::string::npos,
      where + "the root did not warn about the intruder\n" + logs);
}

// Rank 1 reaches the real root only through a relay that alters the table.
void relayRun(const std::string& self, const fs::path& dir, std::mt19937_64& rng, psdp::mp::Report& report) {
  Conn root_probe = listenLoopback(0);  // a free port for the root, released just before rank 0 binds it
  const uint16_t root_port = portOf(root_probe);
  Conn relay = listenLoopback(0);
  const uint16_t relay_port = portOf(relay);
  root_probe = Conn();
  const fs::path run_dir = dir / "relay";
  fs::create_directories(run_dir);
  auto env = torchrunEnv("relay-" + randomHex(rng, 8), randomHex(rng, 32), 0, 5);
  auto env0 = env, env1 = env;
  env0.push_back({"PSDP_ROOT_ADDR", "127.0.0.1:" + std::to_string(root_port)});
  env1.push_back({"PSDP_ROOT_ADDR", "127.0.0.1:" + std::to_string(relay_port)});
  bool altered = false;
  std::thread mitm([&] {
    Conn rank = acceptWithin(relay, 15);
    Conn root;
    for (auto start = Clock::now(); !root.valid() && since(start) < 10;) {
      root = Conn::dial(root_port);
      if (!root.valid()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!rank.valid() || !root.valid()) return;
    // server hello, challenge, proof, hello, accepted, table
    for (bool from_root : {true, false, true, false, true, true}) {
      auto f = (from_root ? root : rank).readFrame(10);
      if (!f) return;
      if (f->first == kTable) {
        f->second.back() ^= 1;
        altered = true;
      }
      if (!(from_root ? rank : root).send(f->second)) return;
    }
    rank.drain(10);
  });
  Rank rank0 = spawnRank(self, 0, 2, env0, run_dir);
  Rank rank1 = spawnRank(self, 1, 2, env1, run_dir);
  const int exit1 = reap(rank1, 15);
  const int exit0 = reap(rank0, 15);
  mitm.join();
  const std::string error = readFile(rank1.result);
  report.check(altered, "relay: the table never passed through the relay");
  report.check(
      exit1 == 1 && error.find("fails its integrity check") != std::string::npos &&
          error.find("127.0.0.1:" + std::to_string(relay_port)) != std::string::npos,
      "relay: rank 1 did not reject the altered table naming its sender: exit " + std::to_string(exit1) + ", " + error);
  report.check(exit0 == 1,
               "relay: rank 0 exited " + std::to_string(exit0) + " without its peer: " + readFile(rank0.result));
  std::printf("relay: rank 1: %s\nrelay: rank 0: %s\n", error.c_str(), readFile(rank0.result).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--rank") return rankMain(argv[2]);
  if (argc != 2) {
    std::fprintf(stderr, "usage: mp_hostile_peers RUNS\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  const int runs = std::atoi(argv[1]);
  char tmpl[] = "/tmp/psdp_hostile_XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  const std::string self = fs::canonical("/proc/self/exe");
  std::mt19937_64 rng(std::random_device{}());
  psdp::mp::Report report;
  int leaks = 0;
  const auto start = Clock::now();
  for (int run = 0; run < runs; ++run) squatterRun(run, self, dir, rng, report, leaks);
  report.check(leaks == 0, std::to_string(leaks) + " squatter connections received a form of the secret");
  std::printf("squatter: %d runs, %d connections received a form of the secret, %.1f s\n", runs, leaks, since(start));
  relayRun(self, dir, rng, report);
  const int status = report.finish();
  if (status == 0)
    fs::remove_all(dir);
  else
    std::printf("logs kept in %s\n", dir.c_str());
  return status;
}
