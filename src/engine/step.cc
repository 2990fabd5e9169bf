#include "engine/step.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "base/dtype.h"

namespace psdp::engine {
namespace {

// How long a waiting call waits on one collective before it looks at the others: collectives of several
// chunks complete in about the order they were posted, and a later one that completes first is finished
// within this.
constexpr double kWaitSliceSeconds = 200e-6;

ScheduleParams scheduleOf(const shard::ShardPlan& plan, const StepConfig& config, Team* const teams[]) {
  ScheduleParams params;
  params.chunks = plan.chunks().size();
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
      packing_(*resources.plan, resources.rank, *resources.pointers),
      schedule_(ChunkSchedule::create(scheduleOf(*resources.plan, config, resources.teams)).value()),
      readiness_(*resources.plan),
      pack_of_(resources.plan->chunks().size(), nullptr) {}

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

size_t Step::gradBytes(uint32_t chunk) const {
  const shard::ShardPlan& plan = *resources_.plan;
  return dtypeSize(*plan.spaces()[static_cast<size_t>(plan.chunks()[chunk].space)].grad_dtype);
}

size_t Step::paramBytes(uint32_t chunk) const {
  const shard::ShardPlan& plan = *resources_.plan;
  return dtypeSize(plan.spaces()[static_cast<size_t>(plan.chunks()[chunk].space)].dtype);
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
  return schedule_.state(chunk);
}

std::string Step::describe(uint32_t chunk) const {
  std::lock_guard lock(mutex_);
  return schedule_.describe(chunk);
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
  for (uint32_t chunk : completed_) PSDP_RETURN_IF_ERROR(schedule_.gradientsReady(chunk));
  return pump();
}

Status Step::allGradientsReady() {
  std::lock_guard lock(mutex_);
  PSDP_RETURN_IF_ERROR(failure_);
  if (backward_done_) return Status::invalidUsage("gradients reported ready after the step's backward was done");
  completed_.clear();
  readiness_.reportRest(completed_);
  for (uint32_t chunk : completed_) PSDP_RETURN_IF_ERROR(schedule_.gradientsReady(chunk));
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
  for (uint32_t chunk : completed_) PSDP_RETURN_IF_ERROR(schedule_.gradientsReady(chunk));
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
    if (!done.request->status().isOk()) {
      return fail(done.request->status().withContext(
          fmt::format("step {}, chunk {}, {}", id_, done.chunk, stageName(done.stage))));
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
  std::byte* pack = packOf(done.chunk);
  if (done.stage == last_reduce) {
    packing_.storeOwnedGradients(done.chunk, pack);
  } else if (done.stage == Stage::kGatherInGroup) {
    packing_.unpackParameters(done.chunk, pack);
  }
  if (done.stage == last_reduce || done.stage == Stage::kGatherInGroup) {
    resources_.pool->giveBack(pack);
    pack_of_[done.chunk] = nullptr;
  }
  return schedule_.stageDone(done.chunk, done.stage);
}

// Every collective runs in place on the chunk's pack buffer (engine/chunk_packing.h).
Status Step::post(const Post& p) {
  Team& team = *resources_.teams[static_cast<int>(p.stage)];
  const shard::ShardPlan& plan = *resources_.plan;
  const shard::Chunk& chunk = plan.chunks()[p.chunk];
  const shard::Space& space = plan.spaces()[static_cast<size_t>(chunk.space)];
  const uint64_t block = packing_.blockElems(p.chunk);
  const size_t member = static_cast<size_t>(packing_.member());
  const size_t replica = static_cast<size_t>(packing_.replica());
  const bool world_level = plan.config().level == shard::ShardLevel::kWorld;
  Result<std::unique_ptr<coll::CollTask>> task = Status::internal("no collective for {}", stageName(p.stage));
  switch (p.stage) {
    case Stage::kReduceInGroup: {
      std::byte* pack = resources_.pool->takeReduce();
      if (pack == nullptr) return fail(Status::internal("step {}: no reduce pack buffer free", id_));
      pack_of_[p.chunk] = pack;
      packing_.packGradients(p.chunk, pack);
      const size_t g = gradBytes(p.chunk);
      task = team.collectives->postReduceScatter(pack, pack + member * block * g, block, *space.grad_dtype, config_.op);
      break;
    }
    case Stage::kReduceAcrossReplicas: {
      const size_t g = gradBytes(p.chunk);
      std::byte* group_piece = packOf(p.chunk) + member * block * g;
      if (world_level) {
        const uint64_t piece = chunk.padded_world_piece;
        task = team.collectives->postReduceScatter(group_piece, group_piece + replica * piece * g, piece,
                                                   *space.grad_dtype, config_.op);
      } else {
        task = team.collectives->postAllReduce(group_piece, group_piece, block, *space.grad_dtype, config_.op);
      }
      break;
    }
    case Stage::kGatherAcrossReplicas: {
      std::byte* pack = resources_.pool->takeGather();
      if (pack == nullptr) return fail(Status::internal("step {}: no gather pack buffer free", id_));
      pack_of_[p.chunk] = pack;
      packing_.packOwnedParameters(p.chunk, pack);
      const size_t e = paramBytes(p.chunk);
      const uint64_t piece = chunk.padded_world_piece;
      std::byte* group_piece = pack + member * block * e;
      task = team.collectives->postAllGather(group_piece + replica * piece * e, group_piece, piece, space.dtype);
      break;
    }
    case Stage::kGatherInGroup: {
      if (!resources_.teams[static_cast<int>(Stage::kGatherAcrossReplicas)]->exists()) {
        std::byte* pack = resources_.pool->takeGather();
        if (pack == nullptr) return fail(Status::internal("step {}: no gather pack buffer free", id_));
        pack_of_[p.chunk] = pack;
        packing_.packOwnedParameters(p.chunk, pack);
      }
      std::byte* pack = packOf(p.chunk);
      const size_t e = paramBytes(p.chunk);
      task = team.collectives->postAllGather(pack + member * block * e, pack, block, space.dtype);
      break;
    }
  }
  if (!task.isOk()) return fail(task.status().withContext(fmt::format("step {}, chunk {}", id_, p.chunk)));
  Result<std::shared_ptr<coll::Request>> request = team.queue->post(std::move(task).value());
  if (!request.isOk()) return fail(request.status());
  in_flight_.push_back(InFlight{p.chunk, p.stage, std::move(request).value()});
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
    if (std::optional<uint32_t> chunk = schedule_.nextReduced()) {
      ++handed_out_;
      return chunk;
    }
    // Nothing in flight: what is missing is gradients or updates, which only the caller can bring.
    if (allHandedOut() || until.expired() || !waitForAny(lock, until)) return std::optional<uint32_t>();
  }
}

Status Step::chunkUpdated(uint32_t chunk) {
  std::lock_guard lock(mutex_);
  PSDP_RETURN_IF_ERROR(failure_);
  PSDP_RETURN_IF_ERROR(schedule_.updated(chunk));
  return pump();
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
      if (schedule_.state(c) != ChunkState::kGathered) {
        pending = c;
        break;
      }
    }
    if (pending > last) return Status::ok();
    if (until.expired()) {
      return Status::timeout("step {}: parameters [{}, {}) of buffer {} are not gathered yet: {}", id_, offset,
                             offset + count, buffer, schedule_.describe(pending));
    }
    if (!waitForAny(lock, until)) {
      return Status::invalidUsage(
          "step {}: parameters [{}, {}) of buffer {} need {}, which cannot be gathered before the framework "
          "updates it (and every chunk before it in gather order)",
          id_, offset, offset + count, buffer, schedule_.describe(pending));
    }
  }
}

Status Step::end(const Deadline& until) {
  std::unique_lock lock(mutex_);
  PSDP_RETURN_IF_ERROR(failure_);
  for (uint32_t c = 0; c < schedule_.chunks(); ++c) {
    const ChunkState state = schedule_.state(c);
    if (state != ChunkState::kUpdated && state != ChunkState::kGathering && state != ChunkState::kGathered) {
      return Status::invalidUsage("step {} ended before {}: update every chunk first", id_, schedule_.describe(c));
    }
  }
  while (true) {
    PSDP_RETURN_IF_ERROR(pump());
    if (schedule_.done()) return Status::ok();
    if (until.expired()) return Status::timeout("step {} did not finish its gathers in time", id_);
    waitForAny(lock, until);
  }
}

}  // namespace psdp::engine
