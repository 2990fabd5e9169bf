// N ranks as threads of this process, each with its own real UCX transport, wired up through an in-memory
// address table: the rig of the multi-rank collective tests.
#pragma once

#include <psdp/psdp.h>

#include <functional>
#include <memory>
#include <vector>

#include "base/status.h"
#include "transport/transport.h"
#include "transport/ucx/ucx_transport.h"

namespace psdp::coll::test {

class UcxWorld {
 public:
  // Creates and connects nranks transports. Errors: whatever a transport returns, with the rank named.
  static Result<std::unique_ptr<UcxWorld>> create(int nranks, psdp_progress_mode_t mode,
                                                  const transport::ucx::UcxOptions& options = {});
  // Closes every transport (collectively, one thread per rank).
  ~UcxWorld();
  UcxWorld(const UcxWorld&) = delete;
  UcxWorld& operator=(const UcxWorld&) = delete;

  int size() const { return static_cast<int>(transports_.size()); }
  psdp_progress_mode_t mode() const { return mode_; }
  transport::Transport& transport(int rank) { return *transports_[static_cast<size_t>(rank)]; }

  // Runs fn(rank) on one thread per rank, all at once, and joins them.
  void runRanks(const std::function<void(int rank)>& fn);

  // Destroys one rank's transport without closing it, as a crashed rank would leave its peers.
  void destroyTransport(int rank) { transports_[static_cast<size_t>(rank)].reset(); }

  // Closes every transport now; the destructor then has nothing left to do. Returns the first error.
  Status close();

 private:
  explicit UcxWorld(psdp_progress_mode_t mode) : mode_(mode) {}

  psdp_progress_mode_t mode_;
  std::vector<std::unique_ptr<transport::Transport>> transports_;
  bool closed_ = false;
};

}  // namespace psdp::coll::test
