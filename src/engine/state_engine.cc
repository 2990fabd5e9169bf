#include "engine/state_engine.h"

#include <fmt/format.h>
#include <spdlog/logger.h>

#include <algorithm>
#include <string>

#include "tune/line_fields.h"
#include "tune/tuning_file.h"

namespace psdp::engine {
namespace {

// What every rank of a step must share besides the step number and plan: the orders, the op, the grouping
// of chunks into transfers, whether it is tuned online, the gradient norm policy (its all-gathers run on the
// reduce teams) and the partial sums' dtype (the reductions' dtype on the wire).
uint64_t orderingOf(const StepConfig& config) {
  return (config.reduce_forward ? 1u : 0u) | (config.gather_backward ? 2u : 0u) | (config.online_tuning ? 4u : 0u) |
         (config.online_tuning && config.tune_grouping ? 8u : 0u) | (static_cast<uint64_t>(config.grad_norm) << 4) |
         (static_cast<uint64_t>(config.partial_sums) << 6) | (static_cast<uint64_t>(config.op) << 8) |
         (static_cast<uint64_t>(config.chunks_per_transfer) << 16);
}

// The agreed fields; two more, not compared but maximised, carry what online tuning measures: the step's
// time and its largest ring block.
constexpr size_t kAgreed = 4, kFields = 6;
const char* const kAgreedFields[kAgreed] = {
    "step", "plan hash", "orders, op, chunks per transfer, online tuning, norm policy and partial sums",
    "fragment bytes"};

// A fragment setting for the log.
std::string fragmentText(size_t bytes) {
  return bytes == 0 ? std::string("the collectives' own") : tune::formatBytes(bytes);
}

}  // namespace

StateEngine::StateEngine(const shard::ShardPlan& plan, int rank, const std::vector<void*>& pointers,
                         std::vector<Team> teams, Logger log)
    : plan_(plan), rank_(rank), pointers_(pointers), teams_(std::move(teams)), log_(std::move(log)) {}

StateEngine::~StateEngine() {
  step_.reset();
}

// One all-gather of (step, plan hash, ordering, fragment, step time, ring block) on each reduce team: a
// rank's shard group and its replica group together link every rank to every other, so all agree once
// every team does, and the maxima of the measurements, passed on from one team to the next, are the
// slowest rank's time and the largest block of any rank.
Result<StateEngine::LastStep> StateEngine::agree(const StepConfig& config) {
  uint64_t ring_block = 0;
  for (Team& team : teams_) {
    if (team.exists()) ring_block = std::max<uint64_t>(ring_block, team.collectives->takeLargestRingBlock());
  }
  uint64_t mine[kFields] = {next_step_,    plan_.hash(), orderingOf(config), config.fragment_bytes,
                            last_step_ns_, ring_block};
  for (Stage stage : {Stage::kReduceInGroup, Stage::kReduceAcrossReplicas}) {
    Team& team = teams_[static_cast<int>(stage)];
    if (!team.exists()) continue;
    const size_t n = team.world_ranks.size();
    agreement_.assign(kFields * n, 0);
    std::copy(mine, mine + kFields, agreement_.begin() + kFields * static_cast<ptrdiff_t>(team.rank));
    PSDP_ASSIGN_OR_RETURN(std::unique_ptr<coll::CollTask> task,
                          team.collectives->postAllGather(agreement_.data() + kFields * team.rank, agreement_.data(),
                                                          kFields, PSDP_UINT64));
    PSDP_ASSIGN_OR_RETURN(std::shared_ptr<coll::Request> request, team.queue->post(std::move(task), false));
    team.queue->wait(*request, Deadline::never());
    PSDP_RETURN_IF_ERROR(request->status());
    for (size_t r = 0; r < n; ++r) {
      const uint64_t* theirs = &agreement_[kFields * r];
      for (size_t f = kAgreed; f < kFields; ++f) mine[f] = std::max(mine[f], theirs[f]);
      for (size_t f = 0; f < kAgreed; ++f) {
        if (theirs[f] == mine[f]) continue;
        Status mismatch = Status::mismatch(
            "step begin: rank {} has {} {}, this rank (rank {}) {}{}", team.world_ranks[r], kAgreedFields[f], theirs[f],
            rank_, mine[f],
            f == 0
                ? (theirs[0] < mine[0] ? ": rank " + std::to_string(team.world_ranks[r]) + " lags" : ": this rank lags")
                : std::string());
        for (Team& t : teams_) {
          if (t.exists()) t.queue->abort(mismatch);
        }
        return mismatch;
      }
    }
  }
  return LastStep{mine[kAgreed], mine[kAgreed + 1]};
}

size_t StateEngine::stagedFragmentBytes() const {
  size_t staged = SIZE_MAX;
  for (const Team& team : teams_) {
    if (team.exists()) staged = std::min(staged, team.collectives->stagedFragmentBytes());
  }
  return staged;
}

void StateEngine::tune(StepConfig& config, const LastStep& last) {
  if (!config.online_tuning) return;
  if (!tuner_started_) {
    tuner_started_ = true;
    TuningScope scope;
    scope.window = config.tune_window;
    scope.grouping = config.tune_grouping;
    scope.fragment = config.tune_fragment;
    scope.chunk_bytes = plan_.config().chunk_bytes;
    scope.chunks = plan_.chunks().size();
    scope.largest_fragment_bytes = stagedFragmentBytes();
    tuner_.start({config.reduce_window, config.chunks_per_transfer, config.fragment_bytes}, scope);
  } else if (last.slowest_ns != kNoSample) {
    tuner_.record(static_cast<double>(last.slowest_ns) * 1e-9, last.ring_block_bytes);
  }
  const EngineSetting best = tuner_.best();
  if (tuner_.takeFrozenNews() && log_ != nullptr) {
    tune::EngineRule rule;
    rule.min_ranks = rule.max_ranks = plan_.config().world_size;
    rule.min_chunk_bytes = plan_.config().chunk_bytes;
    rule.max_chunk_bytes = 2 * plan_.config().chunk_bytes;
    rule.window = static_cast<int>(best.window);
    rule.grouping = static_cast<int>(best.grouping);
    rule.fragment_bytes = best.fragment_bytes;
    log_->info(
        "online tuning: after {} steps the engine keeps window {}, grouping {} and fragment {} ({:.1f} ms a step, "
        "the slowest rank's; {:.2f}x the start's, window {}, grouping {} and fragment {}); as a tuning file's "
        "rule: {}",
        tuner_.steps(), best.window, best.grouping, fragmentText(best.fragment_bytes), tuner_.bestSeconds() * 1e3,
        tuner_.startSeconds() / tuner_.bestSeconds(), config.reduce_window, config.chunks_per_transfer,
        fragmentText(config.fragment_bytes), tune::formatRule(rule));
  }
  const EngineSetting setting = tuner_.next();
  if (config.tune_window) config.reduce_window = config.gather_window = setting.window;
  if (config.tune_grouping) config.chunks_per_transfer = setting.grouping;
  if (config.tune_fragment) config.fragment_bytes = setting.fragment_bytes;
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
  if (config.fragment_bytes != 0 &&
      (config.fragment_bytes < coll::kMinFragmentBytes || config.fragment_bytes > stagedFragmentBytes())) {
    return Status::invalidArgument(
        "fragment_bytes {}: the state's collectives stage fragments of {} to {} bytes (PSDP_FRAGMENT_BYTES and the "
        "tuning file's rules decide the largest)",
        config.fragment_bytes, coll::kMinFragmentBytes, stagedFragmentBytes());
  }
  PSDP_ASSIGN_OR_RETURN(const LastStep last, agree(config));
  tune(config, last);
  // Every rank sets the same fragment here, between the agreement and the step's first collective.
  for (Team& team : teams_) {
    if (team.exists()) PSDP_RETURN_IF_ERROR(team.collectives->overrideFragmentBytes(config.fragment_bytes));
  }
  last_setting_ = {config.reduce_window, config.chunks_per_transfer, config.fragment_bytes};
  const std::vector<Transfer> transfers = groupChunks(plan_, config.chunks_per_transfer);
  ChunkPacking packing(plan_, transfers, rank_, pointers_, config.partial_sums == PartialSums::kFloat32);
  // Pack buffers only for the transfers that do not run in place: a bulk step of one in-place chunk per
  // space needs none.
  PSDP_RETURN_IF_ERROR(
      pool_.reserve(std::min(config.reduce_window, packing.packedReductions()), packing.maxReducePackBytes(),
                    std::min(config.gather_window, packing.packedGathers()), packing.maxGatherPackBytes()));
  StepResources resources;
  resources.plan = &plan_;
  resources.rank = rank_;
  resources.pointers = &pointers_;
  for (int s = 0; s < kStageKinds; ++s) resources.teams[s] = &teams_[static_cast<size_t>(s)];
  resources.pool = &pool_;
  resources.previous_norm = &last_norm_;
  step_ = std::make_unique<Step>(resources, config, next_step_++);
  step_began_ = std::chrono::steady_clock::now();
  return step_.get();
}

Status StateEngine::end(const Deadline& until) {
  if (step_ == nullptr) return Status::invalidUsage("no step has begun");
  PSDP_RETURN_IF_ERROR(step_->end(until));
  abandon();
  last_step_ns_ = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - step_began_).count());
  return Status::ok();
}

void StateEngine::abandon() {
  if (step_ == nullptr) return;
  last_step_ns_ = kNoSample;
  last_timeline_ = step_->takeTimeline();
  if (std::optional<GradNorm> norm = step_->computedNorm()) last_norm_ = *norm;
  step_.reset();
}

}  // namespace psdp::engine
