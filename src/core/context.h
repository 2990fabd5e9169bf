// A context: what the communicators (teams) of one process that share a transport share. It owns the
// transport (one UCX context and worker, one endpoint per rank of the communicator it was made for, the
// transport's progress thread) and the progress driver (one thread, or the callers) that advances the tasks
// of every team on it. A communicator made by psdp_comm_init makes one; its splits share it unless their
// configuration asks for their own (split_share, PSDP_SPLIT_SHARE).
//
// Teams hold the context by shared_ptr: it lives until its last team is destroyed, so teams may be used
// concurrently and destroyed in any order. The transport is closed (flushed, peers told "bye") when the
// last team leaves; cleanly if every team finalized, briefly otherwise.
//
// Team ids: every team of a context has an id, carried in the context field of its tags
// (transport::contextOf), unique among the live teams of this process's context. A communicator made by
// init is team 0 of its own context; a split's id is agreed by its members from their contexts' counters
// (nextTeamId), so it is new on every member.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "base/config.h"
#include "base/deadline.h"
#include "base/log.h"
#include "base/status.h"
#include "coll/progress_driver.h"
#include "transport/transport.h"

namespace psdp::core {

class Context {
 public:
  // Creates the transport (not yet connected) of a context for `nranks` ranks, this one being `rank`.
  static Result<std::shared_ptr<Context>> create(int rank, int nranks, psdp_progress_mode_t mode, Logger log);
  ~Context();

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  psdp_progress_mode_t progressMode() const { return mode_; }
  transport::Transport& transport() { return *transport_; }
  // REQUIRES: connect() succeeded.
  coll::ProgressDriver& driver() { return *driver_; }

  // Connects the transport to every rank (addresses by rank) and starts the driver.
  Status connect(const std::vector<std::vector<std::byte>>& addresses, const Deadline& deadline);

  // The lowest team id this process's context could take next: a split's members take the largest of
  // theirs. Thread-safe.
  uint64_t nextTeamId() const;
  // Registers a team with the agreed id (>= nextTeamId() here) and returns its context tag field. Errors:
  // invalid usage when the tag field would collide with a live team's (65535 teams made since it).
  Result<transport::ContextId> joinTeam(uint64_t id);
  // Stops the driver's and the transport's threads for good (at process exit, psdp's atexit handler):
  // nothing of psdp runs in the background afterwards. Thread-safe.
  void stopThreads();

  // A team leaves: `clean` if it finalized. The last one out closes the transport (up to `deadline` when
  // every team was clean) and returns what the close returned. Thread-safe.
  Status leaveTeam(transport::ContextId context, bool clean, const Deadline& deadline);

 private:
  Context(psdp_progress_mode_t mode, Logger log) : mode_(mode), log_(std::move(log)) {}

  const psdp_progress_mode_t mode_;
  Logger log_;
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<coll::ProgressDriver> driver_;

  mutable std::mutex mutex_;
  uint64_t next_team_id_ = 0;            // GUARDED_BY(mutex_)
  std::set<transport::ContextId> live_;  // GUARDED_BY(mutex_)
  bool all_clean_ = true;                // GUARDED_BY(mutex_)
  bool closed_ = false;                  // GUARDED_BY(mutex_)
};

}  // namespace psdp::core
