#include "core/context.h"

#include <cstdlib>
#include <mutex>
#include <unordered_set>

#include "transport/registry.h"

namespace psdp::core {
namespace {

// How long the last team of a context that failed (or was destroyed without finalize) lets the transport
// flush before it closes it: peers may be gone, and nothing they wait for is left.
constexpr double kUncleanCloseSeconds = 2.0;
// The context field of a tag has 16 bits; 0 is the communicator made by init.
constexpr uint64_t kContextFieldValues = uint64_t{1} << transport::kContextBits;

// Every live context of the process, for the exit handler. Never destroyed: contexts may outlive static
// destruction (a program that exits with communicators alive).
struct LiveContexts {
  std::mutex mutex;
  std::unordered_set<Context*> contexts;
};
LiveContexts& liveContexts() {
  static LiveContexts* live = new LiveContexts();
  return *live;
}

// A process that exits with communicators alive (after a failure, or without finalize) runs the static
// destructors of UCX's libraries while psdp's threads may still call into them; UCX then aborts (a failed
// event-handler update in ucp_worker.c) or crashes. This handler, registered with the first context (so it
// runs before the destructors of everything made earlier, the libraries' included), stops those threads
// first. Nothing is closed: the peers see this process exit.
void stopThreadsAtExit() {
  LiveContexts& live = liveContexts();
  std::lock_guard lock(live.mutex);
  for (Context* context : live.contexts) context->stopThreads();
}

}  // namespace

Result<std::shared_ptr<Context>> Context::create(int rank, int nranks, psdp_progress_mode_t mode, Logger log) {
  static std::once_flag exit_handler;
  std::call_once(exit_handler, [] { std::atexit(stopThreadsAtExit); });
  std::shared_ptr<Context> context(new Context(mode, log));
  {
    LiveContexts& live = liveContexts();
    std::lock_guard lock(live.mutex);
    live.contexts.insert(context.get());
  }
  // With PSDP_PROGRESS=thread the transport keeps its own progress thread even though the driver has one:
  // the transport's thread keeps progressing UCX between collectives (sleeping on the worker's event fd),
  // which rendezvous protocols need after the local side of an operation has completed (a CMA read's
  // acknowledgement to the sender), and the driver then sleeps on the transport's event counter.
  transport::TransportParams params{rank, nranks, mode, log};
  PSDP_ASSIGN_OR_RETURN(context->transport_, transport::createHostTransport(params));
  return context;
}

Context::~Context() {
  {
    LiveContexts& live = liveContexts();
    std::lock_guard lock(live.mutex);
    live.contexts.erase(this);
  }
  // Every team has left (they hold the context), so the driver has no queue; its thread goes first, then the
  // transport (closed by the last team, or shut down by force here after a failed creation).
  driver_.reset();
  transport_.reset();
}

Status Context::connect(const std::vector<std::vector<std::byte>>& addresses, const Deadline& deadline) {
  PSDP_RETURN_IF_ERROR(transport_->connect(addresses, deadline));
  auto driver = std::make_unique<coll::ProgressDriver>(*transport_, mode_ == PSDP_PROGRESS_THREAD, log_);
  std::lock_guard lock(mutex_);
  driver_ = std::move(driver);
  return Status::ok();
}

void Context::stopThreads() {
  std::lock_guard lock(mutex_);
  if (driver_) driver_->stopThread();
  if (transport_) transport_->stopThreads();
}

uint64_t Context::nextTeamId() const {
  std::lock_guard lock(mutex_);
  return next_team_id_;
}

Result<transport::ContextId> Context::joinTeam(uint64_t id) {
  std::lock_guard lock(mutex_);
  if (id < next_team_id_) {
    return Status::internal("team id {} agreed below this context's next id {}", id, next_team_id_);
  }
  // 0 only for the first team of a context (init's); splits cycle through 1..65535.
  auto field = static_cast<transport::ContextId>(id == 0 ? 0 : 1 + (id - 1) % (kContextFieldValues - 1));
  if (live_.count(field) != 0) {
    return Status::invalidUsage(
        "team id {} would reuse the tag field {} of a live communicator: at most {} communicators made by splits "
        "since that one may share its context (split it with split_share = 0 for a context of its own)",
        id, field, kContextFieldValues - 1);
  }
  live_.insert(field);
  next_team_id_ = id + 1;
  return field;
}

Status Context::leaveTeam(transport::ContextId context, bool clean, const Deadline& deadline) {
  std::unique_ptr<coll::ProgressDriver> driver;
  {
    std::lock_guard lock(mutex_);
    live_.erase(context);
    all_clean_ &= clean;
    if (!live_.empty() || closed_ || !transport_) return Status::ok();
    closed_ = true;
    driver = std::move(driver_);
  }
  // No team is left to post or wait: the driver's thread stops before the transport closes under it.
  driver.reset();
  if (all_clean_) return transport_->close(deadline);
  Status closed = transport_->close(Deadline::after(kUncleanCloseSeconds));
  if (!closed.isOk()) log_->debug("closing the transport after a failed communicator: {}", closed.toString());
  return Status::ok();
}

}  // namespace psdp::core
