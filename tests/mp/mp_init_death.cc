// A rank that dies during init, after the bootstrap root registered it and before every rank arrived: every
// other rank's psdp_comm_init_from_env must fail within 2 s of the death, naming the dead rank, instead of
// waiting for PSDP_TIMEOUT. The victim starts its init on a thread and kills itself once its hello is wholly
// in the root's socket (TCP_INFO: bytes acknowledged, none in flight or unsent), so the root registers it and
// then sees it leave. One rank (not 0, not the victim; W >= 3) starts its init only after the death, which
// keeps the rendezvous open until then, and must be told at once too: the root goes on telling the failure
// for a second after rank 0's own init gave up. Run under expect_rank_killed.sh:
//   mp_init_death VICTIM SCRATCH_DIR
#include <dirent.h>
#include <linux/tcp.h>  // its tcp_info has the byte counters glibc's lacks
#include <netinet/in.h>
#include <psdp/psdp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include "mp_report.h"

namespace {

double wallSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int rootPort() {
  const char* addr = std::getenv("PSDP_ROOT_ADDR");
  if (addr == nullptr) return -1;
  const std::string text = addr;
  return std::atoi(text.substr(text.rfind(':') + 1).c_str());
}

// Whether this process has a TCP connection to the root's port whose sent bytes are all acknowledged
// (the hello, the last thing a rank sends, is then in the root's socket).
bool helloDelivered(int port) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return false;
  bool delivered = false;
  while (dirent* entry = readdir(dir)) {
    const int fd = std::atoi(entry->d_name);
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    if (fd <= 2 || getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    const int peer_port = peer.ss_family == AF_INET    ? ntohs(reinterpret_cast<sockaddr_in*>(&peer)->sin_port)
                          : peer.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&peer)->sin6_port)
                                                       : -1;
    if (peer_port != port) continue;
    tcp_info info{};
    socklen_t info_len = sizeof(info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_len) != 0) continue;
    // Acknowledged so far: the SYN (counted as one byte) and the challenge (32 bytes) a rank sends first;
    // anything beyond is its hello, sent once the root proved itself.
    if (info.tcpi_bytes_acked > 1 + 32 && info.tcpi_unacked == 0 && info.tcpi_notsent_bytes == 0) delivered = true;
  }
  closedir(dir);
  return delivered;
}

// Waits (bounded) until `path` exists; returns its contents.
std::string awaitFile(const std::string& path, double timeout_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < until) {
    std::ifstream in(path);
    std::string text;
    if (in >> text) return text;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: mp_init_death VICTIM SCRATCH_DIR\n");
    return 2;
  }
  const int victim = std::atoi(argv[1]);
  const std::string death_file = std::string(argv[2]) + "/death";
  const int rank = std::atoi(std::getenv("PSDP_RANK") != nullptr ? std::getenv("PSDP_RANK") : "-1");
  const int nranks = std::atoi(std::getenv("PSDP_WORLD_SIZE") != nullptr ? std::getenv("PSDP_WORLD_SIZE") : "0");
  psdp::mp::Report report;
  report.setRank(rank);
  if (nranks < 3 || victim <= 0 || victim >= nranks) {
    std::fprintf(stderr, "needs 3 ranks or more, and a victim other than rank 0 (the root), of %d\n", nranks);
    return 2;
  }
  if (rank == victim) {
    std::thread([] {
      psdp_comm_h comm = nullptr;
      (void)psdp_comm_init_from_env(nullptr, &comm);
    }).detach();
    const int port = rootPort();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!helloDelivered(port) && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    {
      std::ofstream out(death_file + ".tmp");
      out << std::to_string(wallSeconds());
    }
    std::rename((death_file + ".tmp").c_str(), death_file.c_str());
    raise(SIGKILL);
  }
  const int late = victim == nranks - 1 ? 1 : nranks - 1;
  if (rank == late) awaitFile(death_file, 30);
  psdp_comm_h comm = nullptr;
  const psdp_status_t s = psdp_comm_init_from_env(nullptr, &comm);
  const double returned = wallSeconds();
  const std::string error = psdp_get_last_error(nullptr);
  const std::string death = awaitFile(death_file, 30);
  const double after = death.empty() ? 1e9 : returned - std::stod(death);
  const std::string v = std::to_string(victim);
  const bool named =
      error.find("rank " + v + " ") != std::string::npos && error.find("left the bootstrap root") != std::string::npos;
  report.check(s == PSDP_ERR_REMOTE, std::string("init returned ") + psdp_status_string(s) + ": " + error);
  report.check(named, "the error does not name rank " + v + " as gone: " + error);
  report.check(after <= 2.0, "init failed " + std::to_string(after) + " s after the death (at most 2 s)");
  if (comm != nullptr) psdp_comm_destroy(comm);
  std::printf("rank %d%s: init failed %.3f s after rank %d died: %s\n", rank, rank == late ? " (late)" : "", after,
              victim, error.c_str());
  return report.finish();
}
