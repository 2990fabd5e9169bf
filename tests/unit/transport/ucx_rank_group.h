// Test rig: N ranks as threads of one process, each owning a UCX transport. Addresses are all-gathered
// through an in-memory table guarded by a barrier (gloo's HashStore rig, without the store).
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <barrier>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "transport/ucx/ucx_transport.h"

namespace psdp::transport::ucx::testing {

inline constexpr double kTestTimeoutSeconds = 10.0;

inline const char* modeName(psdp_progress_mode_t mode) {
  return mode == PSDP_PROGRESS_THREAD ? "Thread" : "Caller";
}

inline Logger rankLogger(int rank) {
  auto logger = makeRankLogger(rank, Config::defaults());
  return logger.isOk() ? logger.value() : Logger();
}

// Threads of this process, from /proc/self/task.
inline int threadCount() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') ++count;
    }
    closedir(dir);
  }
  return count;
}

struct GroupSpec {
  int nranks = 2;
  psdp_progress_mode_t mode = PSDP_PROGRESS_THREAD;
  UcxOptions options;
  // Per-rank logger; null: the rank logger of the default configuration (warnings only).
  std::function<Logger(int rank)> logger;
  bool close_at_end = true;

  static GroupSpec of(int nranks, psdp_progress_mode_t mode = PSDP_PROGRESS_THREAD) {
    GroupSpec spec;
    spec.nranks = nranks;
    spec.mode = mode;
    return spec;
  }
};

// What a rank's body gets: its transport (which it may destroy), and a barrier shared by all ranks.
struct RankContext {
  int rank;
  int nranks;
  std::unique_ptr<Transport>& transport;
  std::barrier<>& sync;
};

// Creates, connects, runs `body` on every rank concurrently, then closes what is left. A rank that fails an
// assertion leaves the barrier (arrive_and_drop), so the others time out on their deadlines, never hang.
inline void runRanks(const GroupSpec& spec, const std::function<void(RankContext&)>& body) {
  std::vector<std::vector<std::byte>> addresses(static_cast<size_t>(spec.nranks));
  std::barrier<> sync(spec.nranks);
  auto rank_main = [&](int rank) {
    std::unique_ptr<Transport> transport;
    auto run = [&] {
      TransportParams params;
      params.rank = rank;
      params.nranks = spec.nranks;
      params.progress_mode = spec.mode;
      params.log = spec.logger ? spec.logger(rank) : rankLogger(rank);
      auto created = createUcxTransport(params, spec.options);
      ASSERT_TRUE(created.isOk()) << created.status().toString();
      transport = std::move(created).value();
      auto address = transport->localAddress();
      ASSERT_TRUE(address.isOk()) << address.status().toString();
      addresses[rank] = address.value();
      sync.arrive_and_wait();
      Status connected = transport->connect(addresses, Deadline::after(kTestTimeoutSeconds));
      ASSERT_TRUE(connected.isOk()) << "rank " << rank << ": " << connected.toString();
      RankContext context{rank, spec.nranks, transport, sync};
      body(context);
      // Nobody closes while another rank still works: over TCP a closed peer shows up as a failed one.
      sync.arrive_and_wait();
      if (transport && spec.close_at_end) {
        Status closed = transport->close(Deadline::after(kTestTimeoutSeconds));
        EXPECT_TRUE(closed.isOk()) << "rank " << rank << ": " << closed.toString();
      }
    };
    run();
    sync.arrive_and_drop();
    transport.reset();
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < spec.nranks; ++r) threads.emplace_back(rank_main, r);
  for (auto& thread : threads) thread.join();
}

// Waits for `completion` and expects success.
inline void expectDone(Transport& transport, const Completion& completion, const char* what) {
  Status status = waitFor(transport, completion, Deadline::after(kTestTimeoutSeconds));
  EXPECT_TRUE(status.isOk()) << what << ": " << status.toString();
}

}  // namespace psdp::transport::ucx::testing
