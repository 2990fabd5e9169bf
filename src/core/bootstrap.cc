// Roots started by psdp_get_unique_id. Their thread must outlive the call (the caller only hands the id to
// the ranks), yet nothing may leak: a process-wide registry owns them, reaps finished ones on the next
// call, and stops and joins the rest when the library is unloaded or the process exits.
#include <unistd.h>

#include <mutex>
#include <vector>

#include "core/bootstrap.h"

namespace psdp::core {
namespace {

class DetachedRoots {
 public:
  DetachedRoots() = default;
  DetachedRoots(const DetachedRoots&) = delete;
  DetachedRoots& operator=(const DetachedRoots&) = delete;

  ~DetachedRoots() {
    std::lock_guard<std::mutex> lock(mutex_);
    forgetAfterFork();
    roots_.clear();  // each destructor stops its thread and joins it
  }

  void add(std::unique_ptr<RootServer> root) {
    std::lock_guard<std::mutex> lock(mutex_);
    forgetAfterFork();
    std::erase_if(roots_, [](const auto& r) { return r->finished(); });
    roots_.push_back(std::move(root));
  }

 private:
  // A forked child inherits copies of the objects but not their threads: destroying a copy would join a
  // thread that does not exist in the child, so the child leaks its copies instead (once, a few KiB).
  void forgetAfterFork() {
    if (getpid() == owner_pid_) return;
    for (auto& root : roots_) (void)root.release();
    roots_.clear();
    owner_pid_ = getpid();
  }

  std::mutex mutex_;
  pid_t owner_pid_ = getpid();                      // GUARDED_BY(mutex_)
  std::vector<std::unique_ptr<RootServer>> roots_;  // GUARDED_BY(mutex_)
};

DetachedRoots& detachedRoots() {
  // Function-local statics are destroyed in reverse order of construction: touching the process logger
  // first makes it outlive the registry, whose roots may still log while they are stopped at exit.
  (void)processLog();
  static DetachedRoots roots;
  return roots;
}

}  // namespace

Result<RendezvousId> startDetachedRoot(const Config& config) {
  PSDP_ASSIGN_OR_RETURN(JobSecret secret, randomSecret());
  double timeout_s = config.timeout_s > 0 ? config.timeout_s : Config::defaults().timeout_s;
  PSDP_ASSIGN_OR_RETURN(std::unique_ptr<RootServer> root,
                        RootServer::start("", 0, secret, config, Deadline::after(timeout_s)));
  RendezvousId id = root->id();
  detachedRoots().add(std::move(root));
  return id;
}

}  // namespace psdp::core
