#include "engine/step.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "base/dtype.h"
#include "base/trace.h"

namespace psdp::engine {
namespace {

// How long a waiting call waits on one collective before it looks at the others: collectives of several
// chunks complete in about the order they were posted, and a later one that completes first is finished
// within this.
constexpr double kWaitSliceSeconds = 200e-6;

ScheduleParams scheduleOf(size_t transfers, const StepConfig& config, Team* const teams[]) {
  ScheduleParams params;
  params.chunks = transfers;
  params.reduce_order =
      config.reduce_forward ? ScheduleParams::forward(params.chunks) : ScheduleParams::backward(params.chunks);
  params.gather_order =
      config.gather_backward ? ScheduleParams::backward(params.chunks) : ScheduleParams::forward(params.chunks);
  params.reduce_window = config.reduce_window;
  params.gather_window = config.gather_window;
  params.reduce_across_replicas = teams[static_cast<int>(Stage::kReduceAcrossReplicas)]->exists();
  params.gather_across_replicas = teams[static_cast<int>(Stage::kGatherAcrossReplicas)]->exists();
  return params;
}

}  // namespace

Step::Step(const StepResources& resources, const StepConfig& config, uint64_t id)
    : resources_(resources),
      config_(config),
      id_(id),
      transfers_(groupChunks(*resources.plan, config.chunks_per_transfer)),
      transfer_of_(resources.plan->chunks().size()),
      packing_(*resources.plan, transfers_, resources.rank, *resources.pointers,
               config.partial_sums == PartialSums::kFloat32),
      schedule_(ChunkSchedule::create(scheduleOf(transfers_.size(), config, resources.teams)).value()),
      readiness_(*resources.plan),
      pack_of_(transfers_.size(), nullptr),
      ready_chunks_(transfers_.size(), 0),
      updated_chunks_(transfers_.size(), 0),
      chunk_handed_(transfer_of_.size(), 0),
      chunk_updated_(transfer_of_.size(), 0),
      handed_ns_(transfer_of_.size(), 0),
      timeline_(id, transfer_of_.size()) {
  for (size_t t = 0; t < transfers_.size(); ++t) {
    for (uint32_t c : transfers_[t].chunks) transfer_of_[c] = static_cast<uint32_t>(t);
    in_place_.push_back(packing_.inPlace(t));
    reduces_in_place_.push_back(packing_.reducesInPlace(t) ? 1 : 0);
  }
  if (config.grad_norm != GradNormPolicy::kNone) {
    norm_ = std::make_unique<GradNormReduction>(transfer_of_.size(),
                                                resources.teams[static_cast<int>(Stage::kReduceInGroup)],
                                                resources.teams[static_cast<int>(Stage::kReduceAcrossReplicas)],
                                                resources.plan->config().level == shard::ShardLevel::kWorld, id);
  }
}

// A step abandoned with collectives in flight fails its teams, so that they complete (and the peers learn
// it) before the pack buffers they use go back to the pool.
Step::~Step() {
  if (!in_flight_.empty()) {
    (void)fail(Status::invalidUsage("step {} was ended or destroyed with collectives in flight", id_));
    for (const InFlight& f : in_flight_) {
      resources_.teams[static_cast<int>(f.stage)]->queue->wait(*f.request, Deadline::never());
    }
  }
  for (std::byte* pack : pack_of_) {
    if (pack != nullptr) resources_.pool->giveBack(pack);
  }
}

// A transfer is ready once every one of its chunks is.
Status Step::chunksReady(const std::vector<uint32_t>& chunks) {
  for (uint32_t chunk : chunks) {
    const uint32_t t = transfer_of_[chunk];
    if (++ready_chunks_[t] == transfers_[t].chunks.size()) PSDP_RETURN_IF_ERROR(schedule_.gradientsReady(t));
  }
  return Status::ok();
}

Status Step::fail(Status status) {
  if (failure_.isOk()) {
    failure_ = status;
    for (Team* team : resources_.teams) {
      if (team->exists()) team->queue->abort(status);
    }
  }
  return failure_;
}

ChunkState Step::chunkState(uint32_t chunk) const {
  std::lock_guard lock(mutex_);
  const ChunkState state = schedule_.state(transfer_of_[chunk]);
  if (state == ChunkState::kReduced && chunk_updated_[chunk] != 0) return ChunkState::kUpdated;
  return state;
}

bool Step::failed() const {
  std::lock_guard lock(mutex_);
  return !failure_.isOk();
}

size_t Step::handedOut() const {
  std::lock_guard lock(mutex_);
  return handed_out_;
}

Status Step::gradientsReady(int buffer, uint64_t offset, uint64_t count) {
  std::lock_guard lock(mutex_);
  PSDP_RETURN_IF_ERROR(failure_);
  if (backward_done_) return Status::invalidUsage("gradients reported ready after the step's backward was done");
  completed_.clear();
  PSDP_RETURN_IF_ERROR(readiness_.report(buffer, offset, count, completed_));
  PSDP_RETURN_IF_ERROR(chunksReady(completed_));
  return pump();
}

Status Step::allGradientsReady() {
  std::lock_guard lock(mutex_);
  PSDP_RETURN_IF_ERROR(failure_);
  if (backward_done_) return Status::invalidUsage("gradients reported ready after the step's backward was done");
  completed_.clear();
  readiness_.reportRest(completed_);
  PSDP_RETURN_IF_ERROR(chunksReady(completed_));
  return pump();
}

Status Step::backwardDone() {
  std::lock_guard lock(mutex_);
  PSDP_RETURN_IF_ERROR(failure_);
  if (backward_done_) return Status::invalidUsage("the step's backward was done already");
  backward_done_ = true;
  const std::vector<shard::OwnedRange> missing = readiness_.unreported();
  if (!missing.empty() && config_.unused == UnusedGradients::kError) {
    const shard::OwnedRange& first = missing.front();
    return fail(Status::invalidUsage(
        "step {}: gradients [{}, {}) of buffer {} ('{}') were never reported ready ({} range(s) in all); report "
        "them, or begin the step with unused gradients treated as zero",
        id_, first.offset, first.offset + first.count, first.buffer,
        resources_.plan->buffers()[static_cast<size_t>(first.buffer)].name, missing.size()));
  }
  // Unused gradients are zero: written so into the gradient buffers, as if backward had produced them.
  const shard::ShardPlan& plan = *resources_.plan;
  for (const shard::OwnedRange& range : missing) {
    for (size_t b = 0; b < plan.buffers().size(); ++b) {
      if (plan.buffers()[b].role != shard::Role::kGradient || plan.parameterOf(static_cast<int>(b)) != range.buffer) {
        continue;
      }
      const size_t esize = dtypeSize(plan.buffers()[b].dtype);
      std::memset(static_cast<std::byte*>((*resources_.pointers)[b]) + range.offset * esize, 0, range.count * esize);
    }
  }
  completed_.clear();
  readiness_.reportRest(completed_);
  PSDP_RETURN_IF_ERROR(chunksReady(completed_));
  return pump();
}

Status Step::pump() {
  PSDP_RETURN_IF_ERROR(failure_);
  for (size_t i = 0; i < in_flight_.size();) {
    const InFlight& f = in_flight_[i];
    if (!resources_.teams[static_cast<int>(f.stage)]->queue->test(*f.request)) {
      ++i;
      continue;
    }
    const InFlight done = f;
    in_flight_.erase(in_flight_.begin() + static_cast<ptrdiff_t>(i));
    if (done.transfer == kNormTransfer) {
      if (!done.request->status().isOk()) {
        return fail(done.request->status().withContext(fmt::format("step {}, gradient norm", id_)));
      }
      if (norm_->gathered()) {
        norm_done_ = true;
      } else {
        PSDP_RETURN_IF_ERROR(postNorm());
      }
      continue;
    }
    if (!done.request->status().isOk()) {
      return fail(done.request->status().withContext(
          fmt::format("step {}, chunk {}, {}", id_, transfers_[done.transfer].chunks.front(), stageName(done.stage))));
    }
    PSDP_RETURN_IF_ERROR(finish(done));
  }
  while (std::optional<Post> next = schedule_.nextPost()) PSDP_RETURN_IF_ERROR(post(*next));
  return Status::ok();
}

Status Step::finish(const InFlight& done) {
  const Stage last_reduce = resources_.teams[static_cast<int>(Stage::kReduceAcrossReplicas)]->exists()
                                ? Stage::kReduceAcrossReplicas
                                : Stage::kReduceInGroup;
  std::byte* pack = packOf(done.transfer);
  // In place, the gathered parameters are where they belong already, and so is the reduced owned piece
  // unless it goes to the gradient shard.
  if (done.stage == last_reduce) {
    packing_.deliverOwnedGradients(done.transfer, bufferOf(done.transfer, /*gather=*/false));
  } else if (pack != nullptr && done.stage == Stage::kGatherInGroup) {
    packing_.unpackParameters(done.transfer, pack);
  }
  if (pack != nullptr && (done.stage == last_reduce || done.stage == Stage::kGatherInGroup)) {
    resources_.pool->giveBack(pack);
    pack_of_[done.transfer] = nullptr;
  }
  if (norm_ && done.stage == last_reduce) PSDP_RETURN_IF_ERROR(addToNorm(done.transfer));
  for (uint32_t chunk : transfers_[done.transfer].chunks) {
    timeline_.record(chunk, timelineStageOf(done.stage), done.request->startedNs(), done.request->completedNs());
  }
  PSDP_RETURN_IF_ERROR(schedule_.stageDone(done.transfer, done.stage));
  // Its chunks are the framework's now, one by one.
  while (std::optional<uint32_t> reduced = schedule_.nextReduced()) {
    for (uint32_t chunk : transfers_[*reduced].chunks) handout_.push_back(chunk);
  }
  return Status::ok();
}

Status Step::addToNorm(uint32_t t) {
  for (uint32_t chunk : transfers_[t].chunks) {
    double sq = 0;
    bool nonfinite = false;
    for (const GradientRun& run : packing_.ownedGradients(chunk)) {
      sq += sumOfSquares(run.data, run.dtype, run.count, &nonfinite);
    }
    norm_->addChunk(chunk, sq, nonfinite);
  }
  return norm_->allChunks() ? postNorm() : Status::ok();
}

Status Step::postNorm() {
  Team* team = norm_->nextTeam();
  Result<std::shared_ptr<coll::Request>> request = norm_->postNext();
  if (!request.isOk()) return fail(request.status().withContext(fmt::format("step {}, gradient norm", id_)));
  const Stage stage = team == resources_.teams[static_cast<int>(Stage::kReduceInGroup)] ? Stage::kReduceInGroup
                                                                                        : Stage::kReduceAcrossReplicas;
  in_flight_.push_back(InFlight{kNormTransfer, stage, std::move(request).value()});
  return Status::ok();
}

Result<std::byte*> Step::beginPhase(uint32_t t, bool gather) {
  if (runsInPlace(t, gather)) return bufferOf(t, gather);
  std::byte* pack = gather ? resources_.pool->takeGather(packing_.packElems(t) * dtypeSize(packing_.paramDtype(t)))
                           : resources_.pool->takeReduce(packing_.packElems(t) * dtypeSize(packing_.reduceDtype(t)));
  if (pack == nullptr) return fail(Status::internal("step {}: no pack buffer free", id_));
  pack_of_[t] = pack;
  if (gather) {
    packing_.packOwnedParameters(t, pack);
  } else {
    packing_.packGradients(t, pack);
  }
  return pack;
}

std::byte* Step::bufferOf(uint32_t t, bool gather) const {
  if (!runsInPlace(t, gather)) return pack_of_[t];
  return gather ? in_place_[t]->parameters : in_place_[t]->gradients;
}

// Every collective runs in place on the transfer's pack buffer, or on the user's buffers where the transfer
// needs no packing (engine/chunk_packing.h).
Status Step::post(const Post& p) {
  Team& team = *resources_.teams[static_cast<int>(p.stage)];
  const shard::ShardPlan& plan = *resources_.plan;
  const uint32_t t = p.chunk;  // the schedule's "chunks" are transfers
  const Transfer& transfer = transfers_[t];
  const psdp_dtype_t reduce_dtype = packing_.reduceDtype(t), param_dtype = packing_.paramDtype(t);
  const uint64_t block = transfer.block;
  const size_t member = static_cast<size_t>(packing_.member());
  const size_t replica = static_cast<size_t>(packing_.replica());
  const bool world_level = plan.config().level == shard::ShardLevel::kWorld;
  Result<std::unique_ptr<coll::CollTask>> task = Status::internal("no collective for {}", stageName(p.stage));
  switch (p.stage) {
    case Stage::kReduceInGroup: {
      PSDP_ASSIGN_OR_RETURN(std::byte * pack, beginPhase(t, /*gather=*/false));
      const size_t g = dtypeSize(reduce_dtype);
      task = team.collectives->postReduceScatter(pack, pack + member * block * g, block, reduce_dtype, config_.op);
      break;
    }
    case Stage::kReduceAcrossReplicas: {
      const size_t g = dtypeSize(reduce_dtype);
      std::byte* group_piece = bufferOf(t, /*gather=*/false) + member * block * g;
      if (world_level) {
        const uint64_t piece = transfer.part;
        task = team.collectives->postReduceScatter(group_piece, group_piece + replica * piece * g, piece, reduce_dtype,
                                                   config_.op);
      } else {
        task = team.collectives->postAllReduce(group_piece, group_piece, block, reduce_dtype, config_.op);
      }
      break;
    }
    case Stage::kGatherAcrossReplicas: {
      PSDP_ASSIGN_OR_RETURN(std::byte * pack, beginPhase(t, /*gather=*/true));
      const size_t e = dtypeSize(param_dtype);
      const uint64_t piece = transfer.part;
      std::byte* group_piece = pack + member * block * e;
      task = team.collectives->postAllGather(group_piece + replica * piece * e, group_piece, piece, param_dtype);
      break;
    }
    case Stage::kGatherInGroup: {
      if (!resources_.teams[static_cast<int>(Stage::kGatherAcrossReplicas)]->exists()) {
        PSDP_RETURN_IF_ERROR(beginPhase(t, /*gather=*/true).status());
      }
      std::byte* pack = bufferOf(t, /*gather=*/true);
      const size_t e = dtypeSize(param_dtype);
      task = team.collectives->postAllGather(pack + member * block * e, pack, block, param_dtype);
      break;
    }
  }
  if (!task.isOk()) {
    return fail(task.status().withContext(fmt::format("step {}, chunk {}", id_, transfer.chunks.front())));
  }
  Result<std::shared_ptr<coll::Request>> request = team.queue->post(std::move(task).value());
  if (!request.isOk()) return fail(request.status());
  in_flight_.push_back(InFlight{t, p.stage, std::move(request).value()});
  return Status::ok();
}

bool Step::waitForAny(std::unique_lock<std::mutex>& lock, const Deadline& until) {
  if (in_flight_.empty()) return false;
  const std::shared_ptr<coll::Request> oldest = in_flight_.front().request;
  coll::TaskQueue* queue = resources_.teams[static_cast<int>(in_flight_.front().stage)]->queue;
  lock.unlock();
  queue->wait(*oldest, until.min(Deadline::after(kWaitSliceSeconds)));
  lock.lock();
  return true;
}

Result<std::optional<uint32_t>> Step::nextChunk(const Deadline& until) {
  std::unique_lock lock(mutex_);
  while (true) {
    PSDP_RETURN_IF_ERROR(pump());
    // The global policy hands out nothing before the norm of every chunk is known.
    const bool held = config_.grad_norm == GradNormPolicy::kGlobal && !norm_done_;
    if (!handout_.empty() && !held) {
      const uint32_t chunk = handout_.front();
      handout_.pop_front();
      chunk_handed_[chunk] = 1;
      handed_ns_[chunk] = trace::nowNs();
      ++handed_out_;
      return std::optional<uint32_t>(chunk);
    }
    // Nothing in flight: what is missing is gradients or updates, which only the caller can bring.
    if (allHandedOut() || until.expired() || !waitForAny(lock, until)) return std::optional<uint32_t>();
  }
}

Status Step::chunkUpdated(uint32_t chunk) {
  std::lock_guard lock(mutex_);
  PSDP_RETURN_IF_ERROR(failure_);
  if (chunk >= transfer_of_.size()) {
    return Status::invalidArgument("updated: chunk {} is not one of the step's {}", chunk, transfer_of_.size());
  }
  if (chunk_updated_[chunk] != 0) return Status::invalidUsage("updated: chunk {} was updated already", chunk);
  if (chunk_handed_[chunk] == 0) {
    return Status::invalidUsage("updated: chunk {} was not handed out (it is {})", chunk,
                                chunkStateName(schedule_.state(transfer_of_[chunk])));
  }
  chunk_updated_[chunk] = 1;
  timeline_.record(chunk, TimelineStage::kUpdate, handed_ns_[chunk], trace::nowNs());
  const uint32_t t = transfer_of_[chunk];
  if (++updated_chunks_[t] == transfers_[t].chunks.size()) PSDP_RETURN_IF_ERROR(schedule_.updated(t));
  return pump();
}

Result<GradNorm> Step::gradNorm(const Deadline& until) {
  std::unique_lock lock(mutex_);
  PSDP_RETURN_IF_ERROR(failure_);
  switch (config_.grad_norm) {
    case GradNormPolicy::kNone:
      return Status::invalidUsage("step {} computes no gradient norm: begin it with a grad_norm policy", id_);
    case GradNormPolicy::kDeferred: {
      GradNorm previous = resources_.previous_norm != nullptr ? *resources_.previous_norm : GradNorm{};
      return previous;
    }
    case GradNormPolicy::kGlobal: break;
  }
  while (true) {
    PSDP_RETURN_IF_ERROR(pump());
    if (norm_done_) return norm_->result();
    if (until.expired()) {
      return Status::timeout("step {}: the gradient norm is not known yet: {} of {} chunks reduced", id_,
                             norm_->chunksDone(), transfer_of_.size());
    }
    if (!waitForAny(lock, until)) {
      return Status::invalidUsage(
          "step {}: the gradient norm needs every chunk reduced, and only {} of {} are: report every gradient (or "
          "call backward_done) first",
          id_, norm_->chunksDone(), transfer_of_.size());
    }
  }
}

std::optional<GradNorm> Step::computedNorm() const {
  std::lock_guard lock(mutex_);
  if (!norm_done_) return std::nullopt;
  return norm_->result();
}

StepTimeline Step::takeTimeline() {
  std::lock_guard lock(mutex_);
  return std::move(timeline_);
}

Status Step::waitParameters(int buffer, uint64_t offset, uint64_t count, const Deadline& until) {
  std::unique_lock lock(mutex_);
  const shard::ShardPlan& plan = *resources_.plan;
  if (buffer < 0 || static_cast<size_t>(buffer) >= plan.buffers().size() || plan.parameterOf(buffer) < 0) {
    return Status::invalidArgument("buffer {} is not a registered parameter or gradient", buffer);
  }
  const int param = plan.parameterOf(buffer);
  const uint64_t size = plan.buffers()[static_cast<size_t>(param)].count;
  if (offset > size || count > size - offset) {
    return Status::invalidArgument("parameters [{}, {}) of buffer {} are past its {} elements", offset, offset + count,
                                   buffer, size);
  }
  if (count == 0) return failure_;
  const uint32_t first = static_cast<uint32_t>(plan.findChunk(param, offset).value().chunk);
  const uint32_t last = static_cast<uint32_t>(plan.findChunk(param, offset + count - 1).value().chunk);
  while (true) {
    PSDP_RETURN_IF_ERROR(pump());
    uint32_t pending = last + 1;
    for (uint32_t c = first; c <= last; ++c) {
      if (schedule_.state(transfer_of_[c]) != ChunkState::kGathered) {
        pending = c;
        break;
      }
    }
    if (pending > last) return Status::ok();
    if (until.expired()) {
      return Status::timeout("step {}: parameters [{}, {}) of buffer {} are not gathered yet: chunk {}, {}", id_,
                             offset, offset + count, buffer, pending, schedule_.describe(transfer_of_[pending]));
    }
    if (!waitForAny(lock, until)) {
      return Status::invalidUsage(
          "step {}: parameters [{}, {}) of buffer {} need chunk {} ({}), which cannot be gathered before the "
          "framework updates it (and every chunk before it in gather order)",
          id_, offset, offset + count, buffer, pending, schedule_.describe(transfer_of_[pending]));
    }
  }
}

Status Step::end(const Deadline& until) {
  std::unique_lock lock(mutex_);
  PSDP_RETURN_IF_ERROR(failure_);
  for (uint32_t c = 0; c < transfer_of_.size(); ++c) {
    if (chunk_updated_[c] == 0) {
      return Status::invalidUsage("step {} ended before chunk {} was updated ({}): update every chunk first", id_, c,
                                  chunkStateName(schedule_.state(transfer_of_[c])));
    }
  }
  while (true) {
    PSDP_RETURN_IF_ERROR(pump());
    if (schedule_.done() && !normPending()) return Status::ok();
    if (until.expired()) return Status::timeout("step {} did not finish its gathers in time", id_);
    waitForAny(lock, until);
  }
}

}  // namespace psdp::engine
