// The progress thread of PSDP_PROGRESS=thread: spins ucp_worker_progress while operations are outstanding
// and sleeps on the worker's event fd when idle (see WorkerLoop for the wake-up protocol). It stands aside
// while a thread waits in waitEvents, which then drives the worker itself (WorkerLoop::DriverScope).
#pragma once

#include <atomic>
#include <thread>

#include "transport/ucx/ucx_worker_loop.h"

namespace psdp::transport::ucx {

class ProgressThread {
 public:
  // Starts the thread. REQUIRES: `loop` outlives this object.
  explicit ProgressThread(WorkerLoop& loop);
  // Stops and joins the thread.
  ~ProgressThread();
  // The same, ahead of destruction (at process exit); later calls do nothing. Not thread-safe.
  void stop();

  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

 private:
  void run();

  WorkerLoop& loop_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace psdp::transport::ucx
