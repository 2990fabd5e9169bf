#include "core/communicator.h"

#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "base/environment.h"
#include "base/trace.h"
#include "coll/provider.h"
#include "core/agreed_settings.h"
#include "topo/numa_binding.h"

namespace psdp::core {

Communicator::Communicator(int rank, int nranks, Config config, Logger log)
    : rank_(rank), nranks_(nranks), config_(std::move(config)), log_(std::move(log)) {}

Communicator::~Communicator() {
  // Destroyed under pending operations, the team fails first: its members are told (they would otherwise
  // wait for this rank until their timeout), and whatever its collectives left posted completes, so that no
  // transfer still references their staging, their completions or a caller's buffer when those go. With
  // nothing pending the members are left alone: operations they still finish without this rank go on.
  if (team_ && state_ != State::kFinalized && (state_ == State::kFailed || (queue_ && !queue_->idle()))) {
    team_->fail(state_ == State::kFailed
                    ? failure_
                    : Status::invalidUsage("rank {} destroyed the communicator before finalizing it", rank_));
  }
  queue_.reset();
  for (auto& collectives : collectives_) collectives.reset();
  if (joined_) (void)leaveContext(/*clean=*/false, Deadline::after(config_.timeout_s));
  team_.reset();
  context_.reset();
}

Result<std::unique_ptr<Communicator>> Communicator::create(int nranks, const RendezvousId& id, int rank,
                                                           const Config& config, std::unique_ptr<RootServer> root) {
  PSDP_ASSIGN_OR_RETURN(Logger log, makeRankLogger(rank, config));
  std::unique_ptr<Communicator> comm(new Communicator(rank, nranks, config, std::move(log)));
  Deadline deadline = Deadline::after(config.timeout_s);
  Status status = comm->connect(id, deadline);
  // The root serves only the rendezvous, which connect() has completed (or given up on).
  root.reset();
  if (!status.isOk()) {
    comm->log_->error("init failed: {}", status.toString());
    return status;
  }
  return comm;
}

Status Communicator::connect(const RendezvousId& id, const Deadline& deadline) {
  // A rank that cannot describe itself or read its tuning file still joins the rendezvous (so the others
  // fail at once), then fails.
  Result<topo::RankDescriptor> self = describeThisRank(config_, log_);
  Result<LoadedTuning> tuning = loadTuning(config_, ProcessEnvironment::instance());
  PSDP_ASSIGN_OR_RETURN(std::shared_ptr<Context> context, Context::create(rank_, nranks_, config_.progress_mode, log_));
  PSDP_ASSIGN_OR_RETURN(std::vector<std::byte> address, context->transport().localAddress());
  log_->debug("rendezvous at {} as rank {} of {}", id.address(), rank_, nranks_);
  std::vector<std::byte> payload =
      self.isOk() && tuning.isOk()
          ? packRankPayload(address, agreedSettingsOf(config_, tuning.value().hash()), self.value())
          : rejectedRankPayload();
  PSDP_ASSIGN_OR_RETURN(auto payloads, exchangeViaRoot(id, rank_, nranks_, payload, config_, deadline, log_));
  PSDP_RETURN_IF_ERROR(self.status());
  PSDP_RETURN_IF_ERROR(tuning.status());
  tuning_ = std::move(tuning).value();
  std::vector<std::vector<std::byte>> addresses;
  std::vector<AgreedSettings> settings;
  std::vector<topo::RankDescriptor> descriptors;
  for (int r = 0; r < nranks_; ++r) {
    PSDP_ASSIGN_OR_RETURN(RankPayload unpacked, unpackRankPayload(payloads[r], r));
    addresses.push_back(std::move(unpacked.address));
    settings.push_back(unpacked.settings);
    descriptors.push_back(std::move(unpacked.descriptor));
  }
  std::vector<int> ranks(static_cast<size_t>(nranks_));
  std::iota(ranks.begin(), ranks.end(), 0);
  PSDP_RETURN_IF_ERROR(checkAgreedSettings(settings, ranks));
  PSDP_RETURN_IF_ERROR(adoptPlacements(Placements::create(std::move(descriptors))));
  // The transport's and the driver's progress threads start here and inherit this thread's binding, and
  // the staging memory is first touched here: all of them land on the rank's NUMA node.
  topo::ScopedNumaBinding binding(placements_.placement(rank_).numa_node);
  log_->debug("NUMA binding of the progress threads and staging: {}", binding.outcome());
  PSDP_RETURN_IF_ERROR(context->connect(addresses, deadline));
  trace::start(config_.trace_file, rank_);
  return joinContext(std::move(context), /*team_id=*/0, std::move(ranks));
}

Status Communicator::adoptPlacements(Result<Placements> placements) {
  PSDP_RETURN_IF_ERROR(placements.status());
  placements_ = std::move(placements).value();
  const topo::RankMapping& mapping = placements_.mapping();
  const topo::RankPlacement& mine = placements_.placement(rank_);
  log_->info("placement: host {} ({} of {} hosts), ring position {}, NUMA node {}, NIC {}", mapping.hosts[mine.host],
             mine.host + 1, mapping.hosts.size(), placements_.ringPosition(rank_), mine.numa_node,
             mine.nic.empty() ? "none" : fmt::format("{} ({})", mine.nic, topo::pathClassName(mine.nic_path)));
  for (const std::string& note : mapping.notes) log_->info("placement: {}", note);
  return Status::ok();
}

Status Communicator::joinContext(std::shared_ptr<Context> context, uint64_t team_id, std::vector<int> members) {
  context_ = std::move(context);
  PSDP_ASSIGN_OR_RETURN(transport::ContextId context_id, context_->joinTeam(team_id));
  joined_ = true;
  team_ = std::make_unique<transport::TeamTransport>(context_->transport(), context_id, std::move(members), rank_);
  coll::CollParams coll_params{rank_, nranks_, config_.fragment_bytes, context_id, log_};
  const coll::InterconnectTraits traits = hostLaneTraits();
  Result<coll::AlgorithmTable> algorithms =
      coll::AlgorithmTable::make(config_.algorithm, config_.algorithms, {}, traits);
  if (!algorithms.isOk()) return algorithms.status().withContext("PSDP_ALGORITHMS");
  coll_params.algorithms = std::move(algorithms).value();
  // Whichever section of the tuning file applyTuning() finds must fit the staging made now.
  coll_params.reserved_fragment_bytes = tuning_.largest_fragment_bytes;
  coll_params.reserved_depth = tuning_.largest_depth;
  coll_params.deterministic = config_.deterministic;
  coll_params.check_calls = config_.check_calls;
  coll_params.single_host = placements_.mapping().hosts.size() == 1;
  // The queue holds at most max_in_flight; one more is made before its post waits for room.
  coll_params.max_tasks = config_.max_in_flight + 1;
  // Every memory kind with a provider gets its collectives now, so that no call pays for their memory.
  for (psdp_memory_kind_t kind : {PSDP_MEMORY_HOST, PSDP_MEMORY_CUDA}) {
    Result<const coll::CollectiveProvider*> provider =
        coll::findCollectiveProvider(kind, kind == PSDP_MEMORY_HOST ? config_.host_collectives : std::string());
    // Host memory always has a provider (barriers run there); other kinds may have none in this build.
    if (kind != PSDP_MEMORY_HOST && provider.status().code() == PSDP_ERR_UNSUPPORTED) continue;
    if (!provider.isOk()) return provider.status().withContext("PSDP_HOST_COLLECTIVES");
    coll::CollParams params = coll_params;
    params.algorithms = provider.value()->algorithms(coll_params.algorithms);
    PSDP_ASSIGN_OR_RETURN(collectives_[kind], provider.value()->create(*team_, params));
    log_->debug("{} memory: collective provider {} ({}; progress by {})", coll::memoryKindName(kind),
                provider.value()->name, provider.value()->description,
                coll::providerProgressName(provider.value()->progress));
  }
  queue_ = std::make_unique<coll::TaskQueue>(context_->driver(), *team_, config_.timeout_s, config_.max_in_flight, log_,
                                             context_id);
  log_->info("communicator ready: rank {} of {}, transport {}, context tag {:#x}, pid {}", rank_, nranks_,
             team_->name(), context_id, getpid());
  return applyTuning(traits);
}

coll::InterconnectTraits Communicator::hostLaneTraits() const {
  coll::InterconnectTraits traits;
  const int host = placements_.placement(rank_).host;
  std::vector<std::string> seen;  // the lanes' transports, for the log
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_ || placements_.placement(r).host != host) continue;
    std::vector<std::string> lanes = team_->laneTransports(r);
    if (!hasSingleCopyLane(lanes)) traits.ring_single_copy = false;
    seen.insert(seen.end(), lanes.begin(), lanes.end());
  }
  if (seen.empty()) return traits;
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  log_->debug("lanes to the other processes of this host: {}; the ring's messages to them {}", fmt::join(seen, ","),
              traits.ring_single_copy ? "are copied once" : "pass through shared memory in pieces");
  return traits;
}

Status Communicator::applyTuning(coll::InterconnectTraits traits) {
  if (!tuning_.file) return Status::ok();
  PSDP_ASSIGN_OR_RETURN(const tune::InterconnectSignature signature, interconnectSignature());
  std::string why;
  const tune::TuningSection* section = tuning_.file->sectionFor(signature, &why);
  if (section == nullptr) {
    log_->info("tuning file {} does not apply to this communicator ({}): {}", tuning_.describe(), signature.format(),
               why);
    return Status::ok();
  }
  PSDP_ASSIGN_OR_RETURN(coll::AlgorithmTable table, hostAlgorithmTable(config_, tuning_, section, traits));
  PSDP_RETURN_IF_ERROR(collectives_[PSDP_MEMORY_HOST]->adoptAlgorithms(table));
  tuned_section_ = section;
  log_->info(
      "tuning file {}: the section of line {} applies to this communicator ({}): {} collective rules, {} "
      "engine rules",
      tuning_.describe(), section->line, signature.format(), section->collectives.size(), section->engine.size());
  return Status::ok();
}

Result<tune::InterconnectSignature> Communicator::interconnectSignature() {
  std::vector<std::string> transports;
  for (int r = 0; r < nranks_; ++r) {
    for (std::string& transport : team_->laneTransports(r)) transports.push_back(std::move(transport));
  }
  std::sort(transports.begin(), transports.end());
  transports.erase(std::unique(transports.begin(), transports.end()), transports.end());
  const std::string mine = fmt::format("{}", fmt::join(transports, ","));
  PSDP_ASSIGN_OR_RETURN(std::vector<std::vector<std::byte>> gathered, allGatherBytes(std::as_bytes(std::span(mine))));
  std::vector<std::string> member_lanes;
  std::vector<int> host_of_member;
  for (int r = 0; r < nranks_; ++r) {
    const std::vector<std::byte>& lanes = gathered[static_cast<size_t>(r)];
    member_lanes.emplace_back(reinterpret_cast<const char*>(lanes.data()), lanes.size());
    host_of_member.push_back(placements_.placement(r).host);
  }
  return teamSignature(team_->name(), member_lanes, host_of_member);
}

Result<std::vector<std::vector<std::byte>>> Communicator::allGatherBytes(std::span<const std::byte> mine) {
  uint64_t length = mine.size();
  std::vector<uint64_t> lengths(static_cast<size_t>(nranks_));
  PSDP_RETURN_IF_ERROR(allGather(&length, lengths.data(), 1, PSDP_UINT64));
  // What is gathered is small (addresses, lane names); a length past this is a broken peer, not memory to make.
  constexpr uint64_t kMostBytes = uint64_t{1} << 20;
  for (size_t r = 0; r < lengths.size(); ++r) {
    if (lengths[r] > kMostBytes) return Status::remote("rank {} sent a length of {} bytes", r, lengths[r]);
  }
  const size_t longest = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<std::byte> padded(longest);
  std::copy(mine.begin(), mine.end(), padded.begin());
  std::vector<std::byte> table(longest * static_cast<size_t>(nranks_));
  if (longest > 0) PSDP_RETURN_IF_ERROR(allGather(padded.data(), table.data(), longest, PSDP_UINT8));
  std::vector<std::vector<std::byte>> all;
  for (size_t r = 0; r < lengths.size(); ++r) {
    const std::byte* begin = table.data() + r * longest;
    all.emplace_back(begin, begin + lengths[r]);
  }
  return all;
}

Status Communicator::leaveContext(bool clean, const Deadline& deadline) {
  joined_ = false;
  return context_->leaveTeam(team_->context(), clean, deadline);
}

Status Communicator::checkUsable(const char* what) const {
  switch (state_) {
    case State::kActive: {
      Status queue_failure = queue_->failure();
      if (queue_failure.isOk()) return Status::ok();
      return queue_failure.withContext(fmt::format("{}: the communicator failed earlier", what));
    }
    case State::kFinalized: return Status::invalidUsage("{}: the communicator is finalized", what);
    case State::kFailed: return failure_.withContext(fmt::format("{}: the communicator failed earlier", what));
  }
  return Status::internal("{}: unknown communicator state", what);
}

Status Communicator::fail(Status status) {
  if (status.isOk()) return status;
  // Invalid arguments and usage errors leave the communicator usable; everything else means a peer or the
  // transport is in an unknown state.
  psdp_status_t code = status.code();
  if (code == PSDP_ERR_INVALID_ARGUMENT || code == PSDP_ERR_INVALID_USAGE || code == PSDP_ERR_UNSUPPORTED) {
    return status;
  }
  if (state_ == State::kActive) {
    state_ = State::kFailed;
    failure_ = status;
    log_->error("communicator failed: {}", status.toString());
  }
  return status;
}

Status Communicator::submit(Result<std::unique_ptr<coll::CollTask>> task, std::shared_ptr<Request>* request_p) {
  if (!task.isOk()) return fail(task.status());
  PSDP_ASSIGN_OR_RETURN(std::shared_ptr<Request> request,
                        queue_->post(std::move(task).value(), /*wake_thread=*/request_p != nullptr));
  if (request_p != nullptr) {
    *request_p = std::move(request);
    return Status::ok();
  }
  queue_->wait(*request, Deadline::never());
  return fail(request->status());
}

Status Communicator::reduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype,
                                   psdp_op_t op, std::shared_ptr<Request>* request_p, psdp_memory_kind_t memory) {
  PSDP_RETURN_IF_ERROR(checkUsable("reduce-scatter"));
  PSDP_ASSIGN_OR_RETURN(coll::Collectives * collectives, collectivesFor(memory, "reduce-scatter"));
  return submit(collectives->postReduceScatter(sendbuf, recvbuf, recvcount, dtype, op), request_p);
}

Status Communicator::allGather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype,
                               std::shared_ptr<Request>* request_p, psdp_memory_kind_t memory) {
  PSDP_RETURN_IF_ERROR(checkUsable("all-gather"));
  PSDP_ASSIGN_OR_RETURN(coll::Collectives * collectives, collectivesFor(memory, "all-gather"));
  return submit(collectives->postAllGather(sendbuf, recvbuf, sendcount, dtype), request_p);
}

Status Communicator::allReduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, psdp_op_t op,
                               std::shared_ptr<Request>* request_p, psdp_memory_kind_t memory) {
  PSDP_RETURN_IF_ERROR(checkUsable("all-reduce"));
  PSDP_ASSIGN_OR_RETURN(coll::Collectives * collectives, collectivesFor(memory, "all-reduce"));
  return submit(collectives->postAllReduce(sendbuf, recvbuf, count, dtype, op), request_p);
}

Status Communicator::broadcast(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, int root,
                               std::shared_ptr<Request>* request_p, psdp_memory_kind_t memory) {
  PSDP_RETURN_IF_ERROR(checkUsable("broadcast"));
  PSDP_ASSIGN_OR_RETURN(coll::Collectives * collectives, collectivesFor(memory, "broadcast"));
  return submit(collectives->postBroadcast(sendbuf, recvbuf, count, dtype, root), request_p);
}

Status Communicator::barrier(std::shared_ptr<Request>* request_p) {
  PSDP_RETURN_IF_ERROR(checkUsable("barrier"));
  return submit(collectives_[PSDP_MEMORY_HOST]->postBarrier(), request_p);
}

Result<coll::Collectives*> Communicator::collectivesFor(psdp_memory_kind_t memory, const char* what) {
  const auto kind = static_cast<size_t>(memory);
  if (kind < collectives_.size() && collectives_[kind] != nullptr) return collectives_[kind].get();
  return Status::unsupported("{} on {} memory: no collective provider of this build serves it", what,
                             coll::memoryKindName(memory));
}

Status Communicator::after(std::shared_ptr<Request> awaited, const Context* context) {
  PSDP_RETURN_IF_ERROR(checkUsable("after"));
  if (context != nullptr && context != context_.get()) {
    return Status::invalidArgument(
        "request: an operation of a communicator on another transport (another init, or a split with "
        "split_share = 0) cannot order this one; wait for it instead");
  }
  return fail(queue_->postAfter(std::move(awaited)));
}

void Communicator::abort() {
  // Only the queue and the transport are touched: both are thread-safe, while state_ belongs to the
  // thread making calls, which learns of the abort from the queue (checkUsable, or its operation's status).
  std::shared_lock lifetime(queue_lifetime_);
  if (!queue_) return;
  queue_->abort(Status::aborted("rank {} aborted the communicator (psdp_comm_abort)", rank_));
}

// Once finalize() has freed the queue every request is done: finalize's barrier ran behind them.
bool Communicator::test(Request& request) {
  std::shared_lock lifetime(queue_lifetime_);
  return queue_ ? queue_->test(request) : request.isDone();
}

bool Communicator::wait(Request& request, const Deadline& until) {
  std::shared_lock lifetime(queue_lifetime_);
  return queue_ ? queue_->wait(request, until) == WaitResult::kDone : request.isDone();
}

bool Communicator::waitAll(std::span<Communicator* const> comms, std::span<Request* const> requests,
                           const Deadline& until) {
  // Held shared for the whole wait, as wait() holds its own: a communicator finalized meanwhile keeps its
  // queue until the wait is over.
  std::vector<std::shared_lock<std::shared_mutex>> lifetimes;
  std::vector<Communicator*> held;
  for (Communicator* comm : comms) {
    if (std::find(held.begin(), held.end(), comm) != held.end()) continue;
    held.push_back(comm);
    lifetimes.emplace_back(comm->queue_lifetime_);
  }
  // The requests by context, in order of first appearance. A communicator without a queue has completed
  // every request it had (finalize or destroy).
  std::vector<std::pair<coll::ProgressDriver*, std::vector<Request*>>> groups;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!comms[i]->queue_) continue;
    coll::ProgressDriver* driver = &comms[i]->context_->driver();
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == driver; });
    if (group == groups.end()) group = groups.insert(groups.end(), {driver, {}});
    group->second.push_back(requests[i]);
  }
  if (groups.size() == 1) return groups[0].first->waitAll(groups[0].second, until) == WaitResult::kDone;
  // Several contexts: each driven in turn for a slice, so that none waits on another (under caller
  // progress nobody else drives them, and a peer may wait on them in another order).
  constexpr double kSliceSeconds = 1e-3;
  while (true) {
    bool all_done = true;
    for (auto& [driver, group] : groups) {
      const Deadline slice = Deadline::after(kSliceSeconds);
      all_done &= driver->waitAll(group, slice.timePoint() < until.timePoint() ? slice : until) == WaitResult::kDone;
    }
    if (all_done) return true;
    if (until.expired()) return false;
  }
}

Status Communicator::finalize() {
  PSDP_RETURN_IF_ERROR(checkUsable("finalize"));
  // The barrier makes sure no peer still expects data from us before our endpoints close; queued behind
  // any request still outstanding, it also lets those complete first.
  PSDP_RETURN_IF_ERROR(barrier());
  Deadline deadline = Deadline::after(config_.timeout_s);
  {
    std::unique_lock lifetime(queue_lifetime_);
    queue_.reset();
  }
  for (auto& collectives : collectives_) collectives.reset();
  Status closed = leaveContext(/*clean=*/true, deadline);
  state_ = State::kFinalized;
  if (!closed.isOk()) log_->warn("finalize: {}", closed.toString());
  return closed;
}

}  // namespace psdp::core
