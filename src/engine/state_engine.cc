#include "engine/state_engine.h"

#include <fmt/format.h>

#include <algorithm>

namespace psdp::engine {
namespace {

// What every rank of a step must share besides the step number and plan: the orders, the op, the grouping
// of chunks into transfers, the gradient norm policy (its all-gathers run on the reduce teams) and the
// partial sums' dtype (the reductions' dtype on the wire).
uint64_t orderingOf(const StepConfig& config) {
  return (config.reduce_forward ? 1u : 0u) | (config.gather_backward ? 2u : 0u) |
         (static_cast<uint64_t>(config.grad_norm) << 4) | (static_cast<uint64_t>(config.partial_sums) << 6) |
         (static_cast<uint64_t>(config.op) << 8) | (static_cast<uint64_t>(config.chunks_per_transfer) << 16);
}

const char* const kAgreedFields[] = {"step", "plan hash",
                                     "orders, op, chunks per transfer, norm policy and partial sums"};

}  // namespace

StateEngine::StateEngine(const shard::ShardPlan& plan, int rank, const std::vector<void*>& pointers,
                         std::vector<Team> teams)
    : plan_(plan), rank_(rank), pointers_(pointers), teams_(std::move(teams)) {}

StateEngine::~StateEngine() {
  step_.reset();
}

// One all-gather of (step, plan hash, ordering) on each reduce team: a rank's shard group and its replica
// group together link every rank to every other, so all agree once every team does.
Status StateEngine::agree(const StepConfig& config) {
  const uint64_t mine[3] = {next_step_, plan_.hash(), orderingOf(config)};
  for (Stage stage : {Stage::kReduceInGroup, Stage::kReduceAcrossReplicas}) {
    Team& team = teams_[static_cast<int>(stage)];
    if (!team.exists()) continue;
    const size_t n = team.world_ranks.size();
    agreement_.assign(3 * n, 0);
    std::copy(mine, mine + 3, agreement_.begin() + 3 * static_cast<ptrdiff_t>(team.rank));
    PSDP_ASSIGN_OR_RETURN(
        std::unique_ptr<coll::CollTask> task,
        team.collectives->postAllGather(agreement_.data() + 3 * team.rank, agreement_.data(), 3, PSDP_UINT64));
    PSDP_ASSIGN_OR_RETURN(std::shared_ptr<coll::Request> request, team.queue->post(std::move(task), false));
    team.queue->wait(*request, Deadline::never());
    PSDP_RETURN_IF_ERROR(request->status());
    for (size_t r = 0; r < n; ++r) {
      for (size_t f = 0; f < 3; ++f) {
        if (agreement_[3 * r + f] == mine[f]) continue;
        Status mismatch = Status::mismatch(
            "step begin: rank {} has {} {}, this rank (rank {}) {}{}", team.world_ranks[r], kAgreedFields[f],
            agreement_[3 * r + f], rank_, mine[f],
            f == 0 ? (agreement_[3 * r] < mine[0] ? ": rank " + std::to_string(team.world_ranks[r]) + " lags"
                                                  : ": this rank lags")
                   : std::string());
        for (Team& t : teams_) {
          if (t.exists()) t.queue->abort(mismatch);
        }
        return mismatch;
      }
    }
  }
  return Status::ok();
}

Result<Step*> StateEngine::begin(StepConfig config) {
  if (step_ != nullptr) {
    return Status::invalidUsage("step {} has not ended: end it before beginning another", step_->id());
  }
  if (config.reduce_window == 0 || config.gather_window == 0) {
    return Status::invalidArgument("a window of 0 chunks (reduce {}, gather {})", config.reduce_window,
                                   config.gather_window);
  }
  if (config.op != PSDP_SUM && config.op != PSDP_AVG) {
    return Status::invalidArgument("op {}: a step reduces gradients with sum or avg", static_cast<int>(config.op));
  }
  for (const shard::Space& space : plan_.spaces()) {
    if (!space.grad_dtype)
      return Status::invalidArgument("the state registers no gradients: a step has nothing to reduce");
    if (space.memory != shard::MemoryKind::kHost || space.grad_memory != shard::MemoryKind::kHost) {
      return Status::unsupported("steps on CUDA memory: this build's engine runs on host memory only");
    }
  }
  if (config.partial_sums == PartialSums::kDefault) {
    const bool has_shard = std::any_of(plan_.buffers().begin(), plan_.buffers().end(), [](const shard::BufferDesc& b) {
      return b.role == shard::Role::kGradientShard;
    });
    config.partial_sums = has_shard ? PartialSums::kFloat32 : PartialSums::kGradientDtype;
  }
  const std::vector<Transfer> transfers = groupChunks(plan_, config.chunks_per_transfer);
  ChunkPacking packing(plan_, transfers, rank_, pointers_, config.partial_sums == PartialSums::kFloat32);
  // Pack buffers only for the transfers that do not run in place: a bulk step of one in-place chunk per
  // space needs none.
  PSDP_RETURN_IF_ERROR(
      pool_.reserve(std::min(config.reduce_window, packing.packedReductions()), packing.maxReducePackBytes(),
                    std::min(config.gather_window, packing.packedGathers()), packing.maxGatherPackBytes()));
  PSDP_RETURN_IF_ERROR(agree(config));
  StepResources resources;
  resources.plan = &plan_;
  resources.rank = rank_;
  resources.pointers = &pointers_;
  for (int s = 0; s < kStageKinds; ++s) resources.teams[s] = &teams_[static_cast<size_t>(s)];
  resources.pool = &pool_;
  resources.previous_norm = &last_norm_;
  step_ = std::make_unique<Step>(resources, config, next_step_++);
  return step_.get();
}

Status StateEngine::end(const Deadline& until) {
  if (step_ == nullptr) return Status::invalidUsage("no step has begun");
  PSDP_RETURN_IF_ERROR(step_->end(until));
  abandon();
  return Status::ok();
}

void StateEngine::abandon() {
  if (step_ == nullptr) return;
  last_timeline_ = step_->takeTimeline();
  if (std::optional<GradNorm> norm = step_->computedNorm()) last_norm_ = *norm;
  step_.reset();
}

}  // namespace psdp::engine
