#include "transport/ucx/ucx_progress_thread.h"

#include <pthread.h>

namespace psdp::transport::ucx {

ProgressThread::ProgressThread(WorkerLoop& loop) : loop_(loop), thread_([this] { run(); }) {}

ProgressThread::~ProgressThread() {
  stop();
}

void ProgressThread::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_seq_cst);
  loop_.signal();
  loop_.wakeStandingDown();
  thread_.join();
}

void ProgressThread::run() {
  // Named for top -H, gdb and perf (at most 15 characters).
  pthread_setname_np(pthread_self(), "psdp-ucx");
  int idle_polls = 0;
  int spin_polls = WorkerLoop::kSpinPolls;
  while (!stop_.load(std::memory_order_acquire)) {
    if (loop_.driven()) {
      loop_.standDown(stop_);
      continue;
    }
    unsigned events = loop_.progress();
    // Let a poster that queued behind the lock go first; otherwise this loop can re-take the lock for many
    // rounds while the poster spins.
    while (loop_.postersWaiting()) std::this_thread::yield();
    if (events > 0) {
      idle_polls = 0;
      continue;
    }
    bool busy = loop_.outstanding() > 0;
    if (busy && idle_polls == 0) spin_polls = WorkerLoop::spinPolls();
    if (busy && ++idle_polls < spin_polls) continue;
    idle_polls = 0;
    // A stop request after this check is not lost: the destructor signals the worker, which makes the arm
    // inside sleep() fail or the poll return.
    if (stop_.load(std::memory_order_acquire)) break;
    loop_.sleep(busy ? WorkerLoop::kMaxSleepWithOpsMs : -1);
  }
}

}  // namespace psdp::transport::ucx
