// Watches the processes of peers on this host through pidfds. A dead peer is seen the moment its process
// exits, whatever the transport: UCX over shared memory otherwise notices only through its keepalive
// (UCX_KEEPALIVE_INTERVAL, 20 s by default), and ranks waiting on a rank that waits on the dead one
// never notice at all.
#pragma once

#include <poll.h>

#include <vector>

#include "base/raii.h"
#include "base/status.h"
#include "transport/process_identity.h"

namespace psdp::transport {

class PeerLiveness {
 public:
  PeerLiveness() = default;
  PeerLiveness(const PeerLiveness&) = delete;
  PeerLiveness& operator=(const PeerLiveness&) = delete;

  // Watches `peer` if `identity` is another process on this host (ProcessIdentity::isOtherLocalProcess);
  // otherwise, and where the kernel has no pidfds, does nothing and returns ok. Errors: remote (the
  // process has already exited).
  Status watch(int peer, const ProcessIdentity& identity);

  // Calls fn(peer, pid) once for every watched peer whose process has exited since the last call. Never
  // blocks.
  template <typename Fn>
  void forEachExited(Fn&& fn) {
    if (watches_.empty() || !pollExited()) return;
    for (Watch& w : watches_) {
      if (w.exited && !w.reported) {
        w.reported = true;
        fn(w.peer, w.pid);
      }
    }
  }

  // The pidfds of peers not yet reported exited, for a poll() that should wake when one exits (it becomes
  // readable, and stays so: reported ones are left out).
  std::vector<int> activeFds() const;

 private:
  struct Watch {
    int peer;
    uint32_t pid;
    bool exited = false;
    bool reported = false;
  };
  // Marks exited watches; true if any is exited and not yet reported.
  bool pollExited();

  std::vector<Watch> watches_;
  std::vector<UniqueFd> fds_;     // fds_[i] belongs to watches_[i]
  std::vector<pollfd> poll_set_;  // the same fds, ready for poll()
};

}  // namespace psdp::transport
