// The host provider's Collectives (coll/host_collectives.h). Every collective is a HostTask: a short list of stages
// (ring passes, recursive halving/doubling) run one after the other, alongside the agreement on its header with every
// other rank (coll/op_header_check.h); the local work of the trivial cases (empty buffers, a
// single rank) is done in start(). Up to kMaxTasksInFlight tasks run at once, each in a task slot of its own
// (completions, agreement messages, direct-phase state) and with staging claimed in sequence order from the
// communicator's arena (coll/staging_arena.h); their messages are kept apart by their sequence numbers. Blocking calls
// post a task and drive it here; core's engine drives posted ones. The algorithm is chosen at post time by the
// communicator's table (coll/algorithm_table.h, chooseAlgorithm): by default recursive halving/doubling for small
// messages, where the ring's n-1 latencies per pass dominate, the ring otherwise; on one host, larger operations first
// try the direct algorithm (withDirect, coll/direct_phase.h), and the planned stages run only if some rank's buffers
// turn out unreachable. Gather, scatter and all-to-all run one exchange stage (coll/peer_exchange.h) behind the
// direct one; the reduce (also behind the direct one) and the collectives with per-rank counts run the ring over
// blocks their post lays out. Point-to-point calls are not
// HostTasks: they take no sequence number of the team (coll/point_to_point.h).
#include "coll/host_collectives.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>

#include "base/recycled.h"
#include "coll/block_offsets_pool.h"
#include "coll/chain_broadcast.h"
#include "coll/direct_kernels.h"
#include "coll/direct_phase.h"
#include "coll/op_context.h"
#include "coll/op_header_check.h"
#include "coll/peer_exchange.h"
#include "coll/point_to_point.h"
#include "coll/recursive_collectives.h"
#include "coll/recursive_exchange.h"
#include "coll/reduce_kernels.h"
#include "coll/ring_all_gather.h"
#include "coll/ring_reduce_scatter.h"
#include "coll/staging_arena.h"
#include "coll/tag.h"

namespace psdp::coll {
namespace {

// The staging arena holds this many ring reduce-scatters of full fragments at once; smaller operations
// (fragments bounded by their blocks, halving/doubling of at most one fragment) fit more.
constexpr int kStagedHostTasks = 2;

// What staging and completions are made for: the largest fragment and depth of the table in use or of any
// table adopted later.
size_t fragmentBytesToStage(const CollParams& params) {
  return std::max(params.algorithms.maxFragmentBytes(params.fragment_bytes), params.reserved_fragment_bytes);
}

int stagedDepth(const CollParams& params) {
  return std::max(params.algorithms.maxDepth(), params.reserved_depth);
}

void copyIfDistinct(std::byte* dst, const std::byte* src, size_t bytes) {
  if (dst != src && bytes > 0) std::memcpy(dst, src, bytes);
}

enum class Stage {
  kDirect,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kRecursiveAllReduce,
  kRecursiveReduceScatter,
  kRecursiveAllGather,
  kExchange,
};

// Why an operation runs the algorithm it runs, for the debug log.
enum class Choice {
  kRule,            // its rule's algorithm (or, for direct, its rule's fallback)
  kDeterministic,   // PSDP_DETERMINISTIC=1 fixes the ring
  kNotPowerOfTwo,   // rhd reduce-scatter and all-gather need a power-of-two rank count
  kExceedsStaging,  // rhd's working vectors must fit one staging slot
};

class HostCollectives;

// What one collective does, fixed at post time. Stages read their arguments from here, so a task never
// allocates after start() except for the state machine of each stage.
struct TaskPlan {
  std::array<Stage, 3> stages{};
  int nstages = 0;
  RingReduceScatterArgs reduce;
  RingAllGatherArgs gather;
  ChainBroadcastArgs broadcast;
  RecursiveAllReduceArgs recursive_reduce;
  RecursiveReduceScatterArgs recursive_scatter;
  RecursiveAllGatherArgs recursive_gather;
  PeerExchangeArgs exchange;
  DirectArgs direct;
  bool tries_direct = false;  // stages[0] is kDirect; the others run only if it finds buffers out of reach
  bool recursive = false;
  // The staging slots the non-direct stages use (0: none), claimed when the first of them starts.
  int staging_slots = 0;
  size_t staging_slot_bytes = 0;
  Choice choice = Choice::kRule;
  const AlgorithmRule* rule = nullptr;  // in the communicator's table
  size_t bytes = 0;                     // the whole buffer, as the table's ranges measure it
  size_t fragment_bytes = 0;            // of ring transfers: the rule's, else the communicator's
  int depth = kDefaultDepth;            // ring fragments in flight per direction
  size_t direct_bytes = 0;              // a direct task's buffer, counted in HostCollectives::postedDirectBytes
  // A single rank or count 0: start() copies `local_bytes` from local_src to local_dst and finalizes. With
  // several ranks the operation still exchanges its header.
  bool local = false;
  const std::byte* local_src = nullptr;
  std::byte* local_dst = nullptr;
  size_t local_bytes = 0;
};

// What a direct phase's outcome was, for the backoff (HostCollectives::skipDirect).
enum class DirectOutcome { kNone, kRan, kFellBack, kFellBackTransient };

// What one running task uses of its communicator besides staging, reused by the tasks that run in it in turn.
struct TaskSlot {
  // depth: the table's largest.
  TaskSlot(uint32_t context_id, int nranks, int depth)
      : sends(depth), recvs(depth), agreement(context_id, nranks), direct(nranks) {}
  CompletionRing sends;
  CompletionRing recvs;
  AgreementChannel agreement;
  DirectSlot direct;
  PhaseStorage phase;  // the running stage's
  bool busy = false;
  // The last task's direct outcome and its rule's back-off, applied when the next task starts here.
  DirectOutcome outcome = DirectOutcome::kNone;
  int outcome_backoff = 0;
};

class HostTask final : public CollTask, public Recycled<HostTask> {
 public:
  // `offsets`: the array the plan's block layouts point into, if any.
  HostTask(HostCollectives& owner, const OpContext& op, const TaskPlan& plan, BlockOffsetsPool::Lease offsets);
  // Gives the task slot and any staging back.
  ~HostTask() override;

  std::string describe() const override { return op_.describe(); }
  std::optional<uint32_t> seq() const override { return op_.header.seq; }
  bool canStart() const override;
  void start(const Deadline& deadline) override;
  Result<Progress> advance() override;
  std::string waitingFor() const override;
  void abandon(const Status& status) override;

 private:
  PhasePtr startStage(Stage stage);
  Result<Progress> advanceStages();
  // Claims the staging of the stages still to run (`needed`), or passes this task's turn: false while an
  // earlier task has not taken its turn or holds the memory.
  Result<bool> settleStaging(bool needed);
  Status failed(Status status);

  HostCollectives& owner_;
  TaskSlot* slot_ = nullptr;  // from start() until destruction
  bool staging_settled_ = false;
  bool staging_claimed_ = false;
  OpContext op_;
  TaskPlan plan_;
  BlockOffsetsPool::Lease offsets_;
  int next_stage_ = 0;
  PhasePtr phase_;                       // in slot_->phase
  DirectPhase* direct_phase_ = nullptr;  // phase_, while it is the direct phase
  bool stages_done_ = false;
  bool exchanges_header_ = false;
  bool header_checked_ = false;
  OpHeaderCheck header_check_;
  Status start_error_;  // start() cannot return one; the first advance() does
  Status data_error_;   // a stage's mismatch, held until the agreement explains it
};

class HostCollectives final : public Collectives, public PointToPointOwner {
 public:
  HostCollectives(transport::Transport& transport, const CollParams& params, StagingArena arena,
                  std::unique_ptr<transport::PeerMemory> peer_memory, DirectChannel::TileMemory tiles)
      : Collectives(transport),
        params_(params),
        staged_fragment_bytes_(fragmentBytesToStage(params)),
        staged_depth_(stagedDepth(params)),
        arena_(std::move(arena)),
        direct_(std::move(peer_memory), std::move(tiles)),
        offsets_pool_(params.nranks, params.max_tasks),
        p2p_completions_(params.max_tasks),
        send_seq_(static_cast<size_t>(params.nranks)),
        recv_seq_(static_cast<size_t>(params.nranks)) {
    for (int i = 0; i < kMaxTasksInFlight; ++i)
      slots_.push_back(std::make_unique<TaskSlot>(params.context_id, params.nranks, staged_depth_));
  }

  Status adoptAlgorithms(const AlgorithmTable& table) override {
    if (table.maxDepth() > staged_depth_ || table.maxFragmentBytes(params_.fragment_bytes) > staged_fragment_bytes_) {
      return Status::invalidArgument(
          "the algorithm table asks for fragments of {} bytes and depth {}, staging holds {} bytes and depth {}",
          table.maxFragmentBytes(params_.fragment_bytes), table.maxDepth(), staged_fragment_bytes_, staged_depth_);
    }
    params_.algorithms = table;
    return Status::ok();
  }

  Status overrideFragmentBytes(size_t bytes) override {
    if (bytes != 0 && (bytes < kMinFragmentBytes || bytes > staged_fragment_bytes_)) {
      return Status::invalidArgument("a fragment of {} bytes: the staging holds fragments of {} to {} bytes", bytes,
                                     kMinFragmentBytes, staged_fragment_bytes_);
    }
    fragment_override_.store(bytes, std::memory_order_relaxed);
    return Status::ok();
  }
  size_t stagedFragmentBytes() const override { return staged_fragment_bytes_; }
  size_t takeLargestRingBlock() override { return largest_ring_block_.exchange(0, std::memory_order_relaxed); }
  // Called by a task as its ring or chain stage starts.
  void noteRingBlock(size_t bytes) {
    size_t seen = largest_ring_block_.load(std::memory_order_relaxed);
    while (bytes > seen && !largest_ring_block_.compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
    }
  }

  Result<std::unique_ptr<CollTask>> postReduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                                      psdp_dtype_t dtype, psdp_op_t op) override;
  Result<std::unique_ptr<CollTask>> postAllGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                                                  psdp_dtype_t dtype) override;
  Result<std::unique_ptr<CollTask>> postAllReduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype,
                                                  psdp_op_t op) override;
  Result<std::unique_ptr<CollTask>> postBroadcast(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype,
                                                  int root) override;
  Result<std::unique_ptr<CollTask>> postBarrier() override;
  Result<std::unique_ptr<CollTask>> postReduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype,
                                               psdp_op_t op, int root) override;
  Result<std::unique_ptr<CollTask>> postGather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype,
                                               int root) override;
  Result<std::unique_ptr<CollTask>> postScatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                                psdp_dtype_t dtype, int root) override;
  Result<std::unique_ptr<CollTask>> postAllToAll(const void* sendbuf, void* recvbuf, size_t count,
                                                 psdp_dtype_t dtype) override;
  Result<std::unique_ptr<CollTask>> postAllGatherV(const void* sendbuf, void* recvbuf, const size_t* counts,
                                                   psdp_dtype_t dtype) override;
  Result<std::unique_ptr<CollTask>> postReduceScatterV(const void* sendbuf, void* recvbuf, const size_t* counts,
                                                       psdp_dtype_t dtype, psdp_op_t op) override;
  Result<std::unique_ptr<CollTask>> postSend(const void* sendbuf, size_t count, psdp_dtype_t dtype, int peer) override;
  Result<std::unique_ptr<CollTask>> postRecv(void* recvbuf, size_t count, psdp_dtype_t dtype, int peer) override;

  Status checkUsable() const;
  void fail(const OpContext& op, const Status& status) override;
  CompletionPool& completions() override { return p2p_completions_; }
  // `tries_direct`: the task starts with the direct phase.
  void logStart(const OpContext& op, const TaskPlan& plan, bool tries_direct) const;
  // Whether a task that tries direct should skip it this time. Every rank must decide alike although tasks
  // complete in different orders on different ranks: the outcome a decision sees is that of the task that
  // ran in the same slot before (kMaxTasksInFlight operations earlier, complete by then on every rank),
  // applied in sequence order (applyDirectOutcome, when a task starts).
  bool skipDirect(const AlgorithmRule& rule);
  // `backoff`: the rule's (AlgorithmRule::backoff) of the task whose outcome it is.
  void applyDirectOutcome(DirectOutcome outcome, int backoff);
  // Logs the outcome of a task that tried and records it in its slot. `transient`: a fallback that says
  // nothing of the next operations (DirectPhase::transient): no backoff.
  DirectOutcome directOutcome(const OpContext& op, bool ran, bool transient);
  DirectChannel& directChannel() { return direct_; }
  bool checksCalls() const { return params_.check_calls; }
  // The buffers of the direct tasks posted and not yet destroyed: posts add (the user's thread), tasks
  // subtract when the driving thread destroys them.
  void countDirectBytes(size_t bytes) { posted_direct_bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  void uncountDirectBytes(size_t bytes) { posted_direct_bytes_.fetch_sub(bytes, std::memory_order_relaxed); }
  size_t postedDirectBytes() const { return posted_direct_bytes_.load(std::memory_order_relaxed); }
  TaskSlot& slotOf(uint32_t seq) { return *slots_[seq % kMaxTasksInFlight]; }
  StagingArena& arena() { return arena_; }

 private:
  OpContext beginOp(OpHeader header);
  std::unique_ptr<CollTask> makeTask(const OpContext& op, const TaskPlan& plan,
                                     BlockOffsetsPool::Lease offsets = BlockOffsetsPool::Lease()) {
    return std::make_unique<HostTask>(*this, op, plan, std::move(offsets));
  }
  // An operation with no peer to meet (count 0, or a lone rank): start() copies `bytes` from src to dst.
  std::unique_ptr<CollTask> localTask(const OpContext& op, TaskPlan& plan, const void* src, void* dst, size_t bytes) {
    plan.local = true;
    plan.local_src = static_cast<const std::byte*>(src);
    plan.local_dst = static_cast<std::byte*>(dst);
    plan.local_bytes = bytes;
    return makeTask(op, plan);
  }
  static size_t fragElems(const TaskPlan& plan, size_t esize) {
    return std::max<size_t>(1, plan.fragment_bytes / esize);
  }
  // A ring reduce-scatter's staging: 2 * depth fragments, no larger than a block.
  static void stageRing(TaskPlan& plan, const BlockLayout& layout, size_t esize) {
    plan.staging_slots = 2 * plan.depth;
    plan.staging_slot_bytes = std::min(fragElems(plan, esize), layout.maxSize()) * esize;
  }
  // The one stage of a ring reduce-scatter of `input` over `layout`, this rank's block reduced into `output`,
  // and its staging (reduce-scatter, reduce, reduce-scatter-v).
  static void planRingReduceScatter(TaskPlan& plan, const void* input, void* output, const BlockLayout& layout,
                                    size_t esize, const ReduceKernel& kernel) {
    plan.reduce = {static_cast<const std::byte*>(input),
                   static_cast<std::byte*>(output),
                   layout,
                   esize,
                   fragElems(plan, esize),
                   kernel};
    plan.stages[plan.nstages++] = Stage::kReduceScatter;
    stageRing(plan, layout, esize);
  }
  // Finds the call's rule and decides whether it runs recursive halving/doubling (see the definition).
  enum class RecursiveFit { kAnyRanks, kPowerOfTwo, kNone };
  void chooseAlgorithm(TaskPlan& plan, OpKind kind, size_t bytes, RecursiveFit fit, size_t staging_bytes) const;
  // `offsets`: the task's, as makeTask takes them.
  std::unique_ptr<CollTask> withDirect(const OpContext& op, TaskPlan& plan, const DirectArgs& args, size_t bytes,
                                       BlockOffsetsPool::Lease offsets = BlockOffsetsPool::Lease());
  // The offsets of blocks of `counts` elements (nranks of them): their prefix sums. Errors: invalid argument
  // when the total overflows.
  Result<BlockOffsetsPool::Lease> offsetsOf(const size_t* counts, const char* call);
  // gather, scatter and all-to-all (root -1): one exchange stage moving `count` elements per pair, behind the
  // direct algorithm where the all-gather rule says so.
  Result<std::unique_ptr<CollTask>> postExchange(OpKind kind, ExchangePattern pattern, const void* sendbuf,
                                                 void* recvbuf, size_t count, psdp_dtype_t dtype, int root);
  Result<std::unique_ptr<CollTask>> postPointToPoint(OpKind kind, std::byte* data, size_t count, psdp_dtype_t dtype,
                                                     int peer);
  Status checkRoot(const char* call, const char* what, int root) const {
    if (root >= 0 && root < params_.nranks) return Status::ok();
    return Status::invalidArgument("{} {} {} is outside [0, {})", call, what, root, params_.nranks);
  }
  spdlog::logger& log() const { return params_.log ? *params_.log : processLog(); }

  CollParams params_;
  const size_t staged_fragment_bytes_;  // what staging and completions hold (stagedFragmentBytes)
  // overrideFragmentBytes's, read at each post (the chunk engine may post from the driving thread).
  std::atomic<size_t> fragment_override_{0};
  std::atomic<size_t> largest_ring_block_{0};
  const int staged_depth_;
  StagingArena arena_;
  std::vector<std::unique_ptr<TaskSlot>> slots_;  // task slot of operation seq: seq % kMaxTasksInFlight
  DirectChannel direct_;
  BlockOffsetsPool offsets_pool_;
  CompletionPool p2p_completions_;
  // Point-to-point messages posted to (send) and from (recv) each rank: both ends count alike (coll/tag.h).
  std::vector<uint32_t> send_seq_;
  std::vector<uint32_t> recv_seq_;
  int direct_backoff_ = 0;     // length of the last run of skips; doubles with every fallback
  int direct_skips_left_ = 0;  // operations still to skip them
  bool read_failure_logged_ = false;
  uint32_t seq_ = 0;
  std::atomic<size_t> posted_direct_bytes_{0};
  // Posts (the user's thread) read it while the thread driving tasks (core's engine) may record a failure.
  mutable std::mutex failed_mutex_;
  Status failed_;  // GUARDED_BY(failed_mutex_)
};

// ---- HostTask ------------------------------------------------------------------------------------------

HostTask::HostTask(HostCollectives& owner, const OpContext& op, const TaskPlan& plan, BlockOffsetsPool::Lease offsets)
    : owner_(owner), op_(op), plan_(plan), offsets_(std::move(offsets)) {
  owner_.countDirectBytes(plan_.direct_bytes);
}

HostTask::~HostTask() {
  owner_.uncountDirectBytes(plan_.direct_bytes);
  phase_.reset();  // before the slot holding it is handed on
  if (slot_ == nullptr) return;
  if (staging_claimed_) owner_.arena().release(op_.header.seq);
  slot_->busy = false;
}

// Tasks start in posting order; the slot is free once the task kMaxTasksInFlight before this one is gone.
bool HostTask::canStart() const {
  return slot_ == nullptr && !owner_.slotOf(op_.header.seq).busy;
}

void HostTask::start(const Deadline& deadline) {
  deadline_ = deadline;
  op_.deadline = deadline;
  slot_ = &owner_.slotOf(op_.header.seq);
  slot_->busy = true;
  owner_.applyDirectOutcome(std::exchange(slot_->outcome, DirectOutcome::kNone), slot_->outcome_backoff);
  op_.sends = &slot_->sends;
  op_.recvs = &slot_->recvs;
  op_.ring_depth = plan_.depth;
  op_.agreement = &slot_->agreement;
  if (op_.nranks > 1 && (owner_.checksCalls() || op_.header.kind == OpKind::kBarrier)) {
    start_error_ = header_check_.post(op_);
    exchanges_header_ = true;
  }
  header_checked_ = !exchanges_header_;
  if (plan_.local) {
    const ReduceKernel& kernel = plan_.reduce.kernel;
    size_t count = plan_.local_bytes / std::max<size_t>(1, plan_.reduce.elem_size);
    // A lone rank's premul-sum result is its own input, scaled.
    if (kernel.scalesInput()) {
      kernel.scaleInput(plan_.local_dst, plan_.local_src, count);
    } else {
      copyIfDistinct(plan_.local_dst, plan_.local_src, plan_.local_bytes);
    }
    if (kernel.finalize != nullptr && plan_.local_bytes > 0) kernel.finalize(plan_.local_dst, count, 1);
    stages_done_ = true;
    return;
  }
  if (plan_.nstages == 0) {
    stages_done_ = true;
    return;
  }
  const bool skips_direct = plan_.tries_direct && owner_.skipDirect(*plan_.rule);
  if (skips_direct) next_stage_ = 1;
  owner_.logStart(op_, plan_, plan_.tries_direct && !skips_direct);
}

// The agreement is polled first. A message of the wrong size (mismatch from the transport) means the
// ranks called different things: the agreement is then awaited, since it names both calls.
Result<Progress> HostTask::advance() {
  if (!start_error_.isOk()) return failed(start_error_);
  bool moved = false;
  if (!header_checked_) {
    Result<bool> checked = header_check_.poll(op_);
    if (!checked.isOk()) return failed(checked.status());
    header_checked_ = moved = checked.value();
  }
  if (!data_error_.isOk()) {
    if (header_checked_) return failed(data_error_);
    return Progress::kBlocked;
  }
  Result<Progress> stages = advanceStages();
  if (!stages.isOk()) {
    if (stages.status().code() != PSDP_ERR_MISMATCH || header_checked_) return failed(stages.status());
    data_error_ = stages.status();
    return Progress::kAdvanced;
  }
  if (stages.value() == Progress::kDone) {
    if (header_checked_) return Progress::kDone;
    // Only the header is missing: kBlocked makes the driver wait for it rather than spin.
    return moved ? Progress::kAdvanced : Progress::kBlocked;
  }
  return moved ? Progress::kAdvanced : stages.value();
}

// kDone here means the stages are done; the task may still wait for its header.
Result<Progress> HostTask::advanceStages() {
  bool moved = false;
  while (!stages_done_) {
    if (!phase_) {
      if (plan_.stages[next_stage_] != Stage::kDirect && !staging_settled_) {
        PSDP_ASSIGN_OR_RETURN(bool settled, settleStaging(/*needed=*/true));
        if (!settled) return moved ? Progress::kAdvanced : Progress::kBlocked;
        moved = true;
      }
      phase_ = startStage(plan_.stages[next_stage_++]);
      moved = true;
    }
    PSDP_ASSIGN_OR_RETURN(Progress progress, phase_->advance());
    // Once the direct phase knows it runs, the task needs no staging: it takes its turn at once, so that the
    // operations behind it claim theirs without waiting for its end.
    if (direct_phase_ != nullptr && direct_phase_->ran() && !staging_settled_) {
      PSDP_RETURN_IF_ERROR(settleStaging(/*needed=*/false).status());
    }
    if (progress == Progress::kBlocked) return moved ? Progress::kAdvanced : Progress::kBlocked;
    if (progress == Progress::kYielded) return progress;
    moved = true;
    if (progress == Progress::kDone) {
      bool ran_direct = false;
      if (direct_phase_ != nullptr) {
        ran_direct = direct_phase_->ran();
        slot_->outcome = owner_.directOutcome(op_, ran_direct, direct_phase_->transient());
        slot_->outcome_backoff = plan_.rule->backoff;
        direct_phase_ = nullptr;
      }
      phase_.reset();
      stages_done_ = ran_direct || next_stage_ == plan_.nstages;
    }
  }
  // A task that needed no staging (local, a barrier, or one that ran direct) still takes its turn.
  if (!staging_settled_) {
    PSDP_ASSIGN_OR_RETURN(bool settled, settleStaging(/*needed=*/false));
    if (!settled) return moved ? Progress::kAdvanced : Progress::kBlocked;
  }
  return Progress::kDone;
}

Result<bool> HostTask::settleStaging(bool needed) {
  StagingArena& arena = owner_.arena();
  if (!needed || plan_.staging_slots == 0) {
    staging_settled_ = arena.pass(op_.header.seq);
    return staging_settled_;
  }
  PSDP_ASSIGN_OR_RETURN(std::optional<StagingSlots> slots,
                        arena.claim(op_.header.seq, plan_.staging_slots, plan_.staging_slot_bytes));
  if (!slots) return false;
  op_.staging = *slots;
  staging_settled_ = staging_claimed_ = true;
  return true;
}

Status HostTask::failed(Status status) {
  owner_.fail(op_, status);
  return status;
}

std::string HostTask::waitingFor() const {
  std::string header = exchanges_header_ ? header_check_.waitingFor(op_) : std::string();
  std::string stage = phase_ ? phase_->waitingFor()
                      : !staging_settled_ && slot_ != nullptr
                          ? std::string("staging memory held by earlier operations of this rank")
                          : std::string();
  if (header.empty() && stage.empty()) return "nothing";
  if (header.empty() || stage.empty()) return header + stage;
  return header + " and " + stage;
}

void HostTask::abandon(const Status& status) {
  owner_.fail(op_, status);
}

PhasePtr HostTask::startStage(Stage stage) {
  switch (stage) {
    case Stage::kDirect: {
      // Results stream past the cache when this one is large or many are in flight (direct_kernels.h).
      plan_.direct.streaming |= owner_.postedDirectBytes() >= kDirectStreamingMinBytes;
      direct_phase_ = slot_->phase.make<DirectPhase>(op_, plan_.direct, owner_.directChannel(), slot_->direct);
      return PhasePtr(direct_phase_);
    }
    case Stage::kReduceScatter:
      owner_.noteRingBlock(plan_.reduce.layout.maxSize() * plan_.reduce.elem_size);
      return startRingReduceScatter(slot_->phase, op_, plan_.reduce);
    case Stage::kAllGather:
      owner_.noteRingBlock(plan_.gather.layout.maxSize() * plan_.gather.elem_size);
      return startRingAllGather(slot_->phase, op_, plan_.gather);
    case Stage::kBroadcast:
      owner_.noteRingBlock(plan_.broadcast.count * plan_.broadcast.elem_size);
      return startChainBroadcast(slot_->phase, op_, plan_.broadcast);
    case Stage::kRecursiveAllReduce: return startRecursiveAllReduce(slot_->phase, op_, plan_.recursive_reduce);
    case Stage::kRecursiveReduceScatter: return startRecursiveReduceScatter(slot_->phase, op_, plan_.recursive_scatter);
    case Stage::kRecursiveAllGather: return startRecursiveAllGather(slot_->phase, op_, plan_.recursive_gather);
    case Stage::kExchange: return startPeerExchange(slot_->phase, op_, plan_.exchange);
  }
  return nullptr;  // unreachable: every stage is handled above
}

// ---- HostCollectives -----------------------------------------------------------------------------------

Result<std::unique_ptr<CollTask>> HostCollectives::postReduceScatter(const void* sendbuf, void* recvbuf,
                                                                     size_t recvcount, psdp_dtype_t dtype,
                                                                     psdp_op_t op_kind) {
  PSDP_RETURN_IF_ERROR(checkUsable());
  PSDP_ASSIGN_OR_RETURN(ReduceKernel kernel, custom_ops_.find("reduce-scatter", dtype, op_kind));
  OpContext op = beginOp(OpHeader{OpKind::kReduceScatter, 0, recvcount, dtype}.withOp(op_kind));
  const size_t esize = dtypeSize(dtype);
  TaskPlan plan;
  plan.reduce.kernel = kernel;
  plan.reduce.elem_size = esize;
  if (recvcount == 0 || params_.nranks == 1) return localTask(op, plan, sendbuf, recvbuf, recvcount * esize);
  // Recursive halving keeps half the buffer of partial sums in one staging slot.
  chooseAlgorithm(plan, OpKind::kReduceScatter, recvcount * static_cast<size_t>(params_.nranks) * esize,
                  RecursiveFit::kPowerOfTwo, recvcount * static_cast<size_t>(params_.nranks / 2) * esize);
  if (plan.recursive) {
    plan.recursive_scatter = {static_cast<const std::byte*>(sendbuf),
                              static_cast<std::byte*>(recvbuf),
                              recvcount,
                              esize,
                              kernel,
                              kernel.scalesInput() ? findReduceKernel(dtype, PSDP_SUM) : kernel};
    plan.stages[plan.nstages++] = Stage::kRecursiveReduceScatter;
    plan.staging_slots = 3;
    plan.staging_slot_bytes = recvcount * static_cast<size_t>(params_.nranks / 2) * esize;
    return withDirect(op, plan,
                      {OpKind::kReduceScatter, static_cast<const std::byte*>(sendbuf), static_cast<std::byte*>(recvbuf),
                       recvcount, esize, kernel},
                      plan.bytes);
  }
  BlockLayout layout(recvcount * static_cast<size_t>(params_.nranks), params_.nranks);
  planRingReduceScatter(plan, sendbuf, recvbuf, layout, esize, kernel);
  return withDirect(op, plan,
                    {OpKind::kReduceScatter, static_cast<const std::byte*>(sendbuf), static_cast<std::byte*>(recvbuf),
                     recvcount, esize, kernel},
                    plan.bytes);
}

Result<std::unique_ptr<CollTask>> HostCollectives::postAllGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                                                                 psdp_dtype_t dtype) {
  PSDP_RETURN_IF_ERROR(checkUsable());
  if (dtypeSize(dtype) == 0) return Status::unsupported("all-gather of dtype {}", static_cast<int>(dtype));
  OpContext op = beginOp(OpHeader{OpKind::kAllGather, 0, sendcount, dtype});
  const size_t esize = dtypeSize(dtype);
  TaskPlan plan;
  plan.reduce.elem_size = esize;
  if (sendcount == 0 || params_.nranks == 1) return localTask(op, plan, sendbuf, recvbuf, sendcount * esize);
  chooseAlgorithm(plan, OpKind::kAllGather, sendcount * static_cast<size_t>(params_.nranks) * esize,
                  RecursiveFit::kPowerOfTwo, /*staging_bytes=*/0);
  if (plan.recursive) {
    plan.recursive_gather = {static_cast<const std::byte*>(sendbuf), static_cast<std::byte*>(recvbuf), sendcount,
                             esize};
    plan.stages[plan.nstages++] = Stage::kRecursiveAllGather;
    return withDirect(op, plan,
                      {OpKind::kAllGather, static_cast<const std::byte*>(sendbuf), static_cast<std::byte*>(recvbuf),
                       sendcount, esize, ReduceKernel{}},
                      plan.bytes);
  }
  BlockLayout layout(sendcount * static_cast<size_t>(params_.nranks), params_.nranks);
  plan.gather = {static_cast<const std::byte*>(sendbuf), static_cast<std::byte*>(recvbuf), layout, esize,
                 fragElems(plan, esize)};
  plan.stages[plan.nstages++] = Stage::kAllGather;
  return withDirect(op, plan,
                    {OpKind::kAllGather, static_cast<const std::byte*>(sendbuf), static_cast<std::byte*>(recvbuf),
                     sendcount, esize, ReduceKernel{}},
                    plan.bytes);
}

// Reduce-scatter over nearly equal blocks leaves this rank's block of the sum in recvbuf; all-gather then
// spreads every block from there. In place, the input blocks are only read (partial sums live in staging).
Result<std::unique_ptr<CollTask>> HostCollectives::postAllReduce(const void* sendbuf, void* recvbuf, size_t count,
                                                                 psdp_dtype_t dtype, psdp_op_t op_kind) {
  PSDP_RETURN_IF_ERROR(checkUsable());
  PSDP_ASSIGN_OR_RETURN(ReduceKernel kernel, custom_ops_.find("all-reduce", dtype, op_kind));
  OpContext op = beginOp(OpHeader{OpKind::kAllReduce, 0, count, dtype}.withOp(op_kind));
  const size_t esize = dtypeSize(dtype);
  const auto* input = static_cast<const std::byte*>(sendbuf);
  auto* output = static_cast<std::byte*>(recvbuf);
  TaskPlan plan;
  plan.reduce.kernel = kernel;
  plan.reduce.elem_size = esize;
  if (count == 0 || params_.nranks == 1) return localTask(op, plan, input, output, count * esize);
  // Recursive doubling receives the partner's whole vector into one staging slot.
  chooseAlgorithm(plan, OpKind::kAllReduce, count * esize, RecursiveFit::kAnyRanks, count * esize);
  if (plan.recursive) {
    plan.recursive_reduce = {input, output, count, esize, kernel, ReduceKernel{}};
    if (kernel.scalesInput()) {
      plan.recursive_reduce.prescale = kernel;
      plan.recursive_reduce.kernel = findReduceKernel(dtype, PSDP_SUM);
    }
    plan.stages[plan.nstages++] = Stage::kRecursiveAllReduce;
    plan.staging_slots = 1;
    plan.staging_slot_bytes = count * esize;
    return withDirect(op, plan, {OpKind::kAllReduce, input, output, count, esize, kernel}, plan.bytes);
  }
  BlockLayout layout(count, params_.nranks);
  std::byte* own_block = output + layout.offset(params_.rank) * esize;
  plan.reduce = {input, own_block, layout, esize, fragElems(plan, esize), kernel};
  plan.gather = {own_block, output, layout, esize, fragElems(plan, esize)};
  plan.stages[plan.nstages++] = Stage::kReduceScatter;
  plan.stages[plan.nstages++] = Stage::kAllGather;
  stageRing(plan, layout, esize);
  return withDirect(op, plan, {OpKind::kAllReduce, input, output, count, esize, kernel}, plan.bytes);
}

Result<std::unique_ptr<CollTask>> HostCollectives::postBroadcast(const void* sendbuf, void* recvbuf, size_t count,
                                                                 psdp_dtype_t dtype, int root) {
  PSDP_RETURN_IF_ERROR(checkUsable());
  if (dtypeSize(dtype) == 0) return Status::unsupported("broadcast of dtype {}", static_cast<int>(dtype));
  PSDP_RETURN_IF_ERROR(checkRoot("broadcast", "root", root));
  OpHeader header{OpKind::kBroadcast, 0, count, dtype};
  header.root = root;
  OpContext op = beginOp(header);
  const size_t esize = dtypeSize(dtype);
  TaskPlan plan;
  plan.reduce.elem_size = esize;
  if (count == 0 || params_.nranks == 1) return localTask(op, plan, sendbuf, recvbuf, count * esize);
  chooseAlgorithm(plan, OpKind::kBroadcast, count * esize, RecursiveFit::kNone, /*staging_bytes=*/0);
  plan.broadcast = {root,
                    static_cast<const std::byte*>(sendbuf),
                    static_cast<std::byte*>(recvbuf),
                    count,
                    esize,
                    fragElems(plan, esize)};
  plan.stages[plan.nstages++] = Stage::kBroadcast;
  DirectArgs direct{OpKind::kBroadcast,
                    static_cast<const std::byte*>(sendbuf),
                    static_cast<std::byte*>(recvbuf),
                    count,
                    esize,
                    ReduceKernel{},
                    root};
  return withDirect(op, plan, direct, count * esize);
}

Result<std::unique_ptr<CollTask>> HostCollectives::postBarrier() {
  PSDP_RETURN_IF_ERROR(checkUsable());
  // The agreement every operation runs is a dissemination barrier: nothing else to do.
  return makeTask(beginOp(OpHeader{OpKind::kBarrier}), TaskPlan{});
}

// The reduce is a ring reduce-scatter whose only non-empty block is the root's: every fragment goes once
// around the ring, starting at the rank after the root, each rank adding its input, and ends reduced in the
// root's recvbuf (a pipelined chain: every link carries the data once). The other ranks write nothing. On
// one host the direct algorithm comes first: the root reads every rank's input and reduces it into its
// recvbuf in one pass, as the direct reduce-scatter does for its block.
Result<std::unique_ptr<CollTask>> HostCollectives::postReduce(const void* sendbuf, void* recvbuf, size_t count,
                                                              psdp_dtype_t dtype, psdp_op_t op_kind, int root) {
  PSDP_RETURN_IF_ERROR(checkUsable());
  PSDP_ASSIGN_OR_RETURN(ReduceKernel kernel, custom_ops_.find("reduce", dtype, op_kind));
  PSDP_RETURN_IF_ERROR(checkRoot("reduce", "root", root));
  OpHeader header = OpHeader{OpKind::kReduce, 0, count, dtype}.withOp(op_kind);
  header.root = root;
  OpContext op = beginOp(header);
  const size_t esize = dtypeSize(dtype);
  TaskPlan plan;
  plan.reduce.kernel = kernel;
  plan.reduce.elem_size = esize;
  if (count == 0 || params_.nranks == 1) return localTask(op, plan, sendbuf, recvbuf, count * esize);
  chooseAlgorithm(plan, OpKind::kReduceScatter, count * esize, RecursiveFit::kNone, /*staging_bytes=*/0);
  BlockOffsetsPool::Lease offsets = offsets_pool_.take();
  for (int b = 0; b <= params_.nranks; ++b) offsets.data()[b] = b <= root ? 0 : count;
  BlockLayout layout = BlockLayout::fromOffsets(offsets.data(), params_.nranks);
  planRingReduceScatter(plan, sendbuf, recvbuf, layout, esize, kernel);
  // On one host, larger ones first try the root reducing every rank's input in place (the reduce-scatter
  // rule's direct range).
  DirectArgs direct{OpKind::kReduce,
                    static_cast<const std::byte*>(sendbuf),
                    static_cast<std::byte*>(recvbuf),
                    count,
                    esize,
                    kernel,
                    root};
  return withDirect(op, plan, direct, count * esize, std::move(offsets));
}

Result<std::unique_ptr<CollTask>> HostCollectives::postGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                                                              psdp_dtype_t dtype, int root) {
  return postExchange(OpKind::kGather, ExchangePattern::kGather, sendbuf, recvbuf, sendcount, dtype, root);
}

Result<std::unique_ptr<CollTask>> HostCollectives::postScatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                                               psdp_dtype_t dtype, int root) {
  return postExchange(OpKind::kScatter, ExchangePattern::kScatter, sendbuf, recvbuf, recvcount, dtype, root);
}

Result<std::unique_ptr<CollTask>> HostCollectives::postAllToAll(const void* sendbuf, void* recvbuf, size_t count,
                                                                psdp_dtype_t dtype) {
  return postExchange(OpKind::kAllToAll, ExchangePattern::kAllToAll, sendbuf, recvbuf, count, dtype, -1);
}

// count 0, or a lone rank, needs no exchange: start() copies this rank's block (at one rank, the whole call).
Result<std::unique_ptr<CollTask>> HostCollectives::postExchange(OpKind kind, ExchangePattern pattern,
                                                                const void* sendbuf, void* recvbuf, size_t count,
                                                                psdp_dtype_t dtype, int root) {
  PSDP_RETURN_IF_ERROR(checkUsable());
  if (dtypeSize(dtype) == 0) return Status::unsupported("{} of dtype {}", opKindName(kind), static_cast<int>(dtype));
  OpHeader header{kind, 0, count, dtype};
  if (kind != OpKind::kAllToAll) {
    PSDP_RETURN_IF_ERROR(checkRoot(opKindName(kind), "root", root));
    header.root = root;
  }
  OpContext op = beginOp(header);
  const size_t esize = dtypeSize(dtype);
  TaskPlan plan;
  plan.reduce.elem_size = esize;
  if (count == 0 || params_.nranks == 1) return localTask(op, plan, sendbuf, recvbuf, count * esize);
  // The table's all-gather rule decides whether to try direct, and gives the messages in flight per direction
  // (its depth).
  const size_t total_bytes = count * esize * static_cast<size_t>(params_.nranks);
  chooseAlgorithm(plan, OpKind::kAllGather, total_bytes, RecursiveFit::kNone, /*staging_bytes=*/0);
  const auto* input = static_cast<const std::byte*>(sendbuf);
  auto* output = static_cast<std::byte*>(recvbuf);
  plan.exchange = {pattern, std::max(root, 0), input, output, count * esize};
  plan.stages[plan.nstages++] = Stage::kExchange;
  return withDirect(op, plan, {kind, input, output, count, esize, ReduceKernel{}, root}, total_bytes);
}

// Per-rank counts run the ring over blocks of those sizes: the same schedule, each link carrying every block
// but the receiver's own once.
Result<std::unique_ptr<CollTask>> HostCollectives::postAllGatherV(const void* sendbuf, void* recvbuf,
                                                                  const size_t* counts, psdp_dtype_t dtype) {
  PSDP_RETURN_IF_ERROR(checkUsable());
  if (dtypeSize(dtype) == 0) return Status::unsupported("all-gather-v of dtype {}", static_cast<int>(dtype));
  PSDP_ASSIGN_OR_RETURN(BlockOffsetsPool::Lease offsets, offsetsOf(counts, "all-gather-v"));
  const size_t total = offsets.data()[params_.nranks];
  OpHeader header{OpKind::kAllGatherV, 0, total, dtype};
  header.counts_digest = countsDigest(counts, params_.nranks);
  OpContext op = beginOp(header);
  const size_t esize = dtypeSize(dtype);
  auto* output = static_cast<std::byte*>(recvbuf);
  TaskPlan plan;
  plan.reduce.elem_size = esize;
  if (total == 0 || params_.nranks == 1) {
    return localTask(op, plan, sendbuf, output + offsets.data()[params_.rank] * esize, counts[params_.rank] * esize);
  }
  chooseAlgorithm(plan, OpKind::kAllGather, total * esize, RecursiveFit::kNone, /*staging_bytes=*/0);
  BlockLayout layout = BlockLayout::fromOffsets(offsets.data(), params_.nranks);
  plan.gather = {static_cast<const std::byte*>(sendbuf), output, layout, esize, fragElems(plan, esize)};
  plan.stages[plan.nstages++] = Stage::kAllGather;
  return makeTask(op, plan, std::move(offsets));
}

Result<std::unique_ptr<CollTask>> HostCollectives::postReduceScatterV(const void* sendbuf, void* recvbuf,
                                                                      const size_t* counts, psdp_dtype_t dtype,
                                                                      psdp_op_t op_kind) {
  PSDP_RETURN_IF_ERROR(checkUsable());
  PSDP_ASSIGN_OR_RETURN(ReduceKernel kernel, custom_ops_.find("reduce-scatter-v", dtype, op_kind));
  PSDP_ASSIGN_OR_RETURN(BlockOffsetsPool::Lease offsets, offsetsOf(counts, "reduce-scatter-v"));
  const size_t total = offsets.data()[params_.nranks];
  OpHeader header = OpHeader{OpKind::kReduceScatterV, 0, total, dtype}.withOp(op_kind);
  header.counts_digest = countsDigest(counts, params_.nranks);
  OpContext op = beginOp(header);
  const size_t esize = dtypeSize(dtype);
  const auto* input = static_cast<const std::byte*>(sendbuf);
  TaskPlan plan;
  plan.reduce.kernel = kernel;
  plan.reduce.elem_size = esize;
  if (total == 0 || params_.nranks == 1) {
    return localTask(op, plan, input + offsets.data()[params_.rank] * esize, recvbuf, counts[params_.rank] * esize);
  }
  chooseAlgorithm(plan, OpKind::kReduceScatter, total * esize, RecursiveFit::kNone, /*staging_bytes=*/0);
  BlockLayout layout = BlockLayout::fromOffsets(offsets.data(), params_.nranks);
  planRingReduceScatter(plan, input, recvbuf, layout, esize, kernel);
  return makeTask(op, plan, std::move(offsets));
}

Result<std::unique_ptr<CollTask>> HostCollectives::postSend(const void* sendbuf, size_t count, psdp_dtype_t dtype,
                                                            int peer) {
  // The transport only reads a send's buffer.
  return postPointToPoint(OpKind::kSend, const_cast<std::byte*>(static_cast<const std::byte*>(sendbuf)), count, dtype,
                          peer);
}

Result<std::unique_ptr<CollTask>> HostCollectives::postRecv(void* recvbuf, size_t count, psdp_dtype_t dtype, int peer) {
  return postPointToPoint(OpKind::kRecv, static_cast<std::byte*>(recvbuf), count, dtype, peer);
}

Result<std::unique_ptr<CollTask>> HostCollectives::postPointToPoint(OpKind kind, std::byte* data, size_t count,
                                                                    psdp_dtype_t dtype, int peer) {
  const bool send = kind == OpKind::kSend;
  const char* call = send ? "send" : "recv";
  PSDP_RETURN_IF_ERROR(checkUsable());
  if (dtypeSize(dtype) == 0) return Status::unsupported("{} of dtype {}", call, static_cast<int>(dtype));
  PSDP_RETURN_IF_ERROR(checkRoot(call, "peer", peer));
  uint32_t& counter = (send ? send_seq_ : recv_seq_)[static_cast<size_t>(peer)];
  OpContext op;
  op.transport = &transport_;
  op.rank = params_.rank;
  op.nranks = params_.nranks;
  op.header = OpHeader{kind, counter++, count, dtype};
  op.header.root = peer;
  op.tag = makePointToPointTag(params_.context_id, op.header.seq);
  return makePointToPointTask(*this, op, {send, peer, data, count * dtypeSize(dtype)});
}

Result<BlockOffsetsPool::Lease> HostCollectives::offsetsOf(const size_t* counts, const char* call) {
  BlockOffsetsPool::Lease offsets = offsets_pool_.take();
  size_t* prefix = offsets.data();
  prefix[0] = 0;
  for (int r = 0; r < params_.nranks; ++r) {
    if (__builtin_add_overflow(prefix[r], counts[r], &prefix[r + 1])) {
      return Status::invalidArgument("{}: the counts overflow at rank {}", call, r);
    }
  }
  return offsets;
}

// A failed operation may have left transfers posted on the shared completions and tag space; running
// another one on top could match its messages or reset its completions under the transport.
Status HostCollectives::checkUsable() const {
  std::lock_guard lock(failed_mutex_);
  if (failed_.isOk()) return Status::ok();
  return Status::make(failed_.code(), "collectives unusable after an earlier failure: {}", failed_.message());
}

OpContext HostCollectives::beginOp(OpHeader header) {
  OpContext op;
  op.transport = &transport_;
  op.rank = params_.rank;
  op.nranks = params_.nranks;
  op.header = header;
  op.header.seq = seq_++;
  op.tag = makeTag(params_.context_id, op.header.seq);
  return op;
}

// The call's rule decides, except that deterministic mode fixes the ring, and recursive halving/doubling
// (the rule's algorithm, or direct's fallback) runs only where it fits: a power-of-two rank count for
// reduce-scatter and all-gather, vectors of at most one fragment in a staging slot (`staging_bytes`), and
// not at all for the broadcast. Elsewhere the ring runs.
void HostCollectives::chooseAlgorithm(TaskPlan& plan, OpKind kind, size_t bytes, RecursiveFit fit,
                                      size_t staging_bytes) const {
  const AlgorithmRule& rule = params_.algorithms.find(kind, params_.nranks, bytes);
  plan.rule = &rule;
  plan.bytes = bytes;
  // Halving/doubling's fit is judged on the rule's fragment, which the staging holds whatever the override.
  const size_t rule_fragment_bytes = rule.fragment_bytes != 0 ? rule.fragment_bytes : params_.fragment_bytes;
  const size_t override_bytes = fragment_override_.load(std::memory_order_relaxed);
  plan.fragment_bytes = override_bytes != 0 ? override_bytes : rule_fragment_bytes;
  plan.depth = rule.depth != 0 ? rule.depth : kDefaultDepth;
  plan.recursive = false;
  plan.choice = Choice::kRule;
  const Algorithm planned = rule.algorithm == Algorithm::kDirect ? rule.fallback : rule.algorithm;
  if (params_.deterministic) {
    plan.choice = Choice::kDeterministic;
  } else if (planned != Algorithm::kRecursive || fit == RecursiveFit::kNone) {
    return;
  } else if (fit == RecursiveFit::kPowerOfTwo && !isPowerOfTwo(params_.nranks)) {
    plan.choice = Choice::kNotPowerOfTwo;
  } else if (staging_bytes > rule_fragment_bytes) {
    plan.choice = Choice::kExceedsStaging;
  } else {
    plan.recursive = true;
  }
}

// The planned stages stay behind the direct phase as its fallback. Premul-sum never runs direct: a rank
// reducing another rank's input would need that rank's scalar.
std::unique_ptr<CollTask> HostCollectives::withDirect(const OpContext& op, TaskPlan& plan, const DirectArgs& args,
                                                      size_t bytes, BlockOffsetsPool::Lease offsets) {
  const AlgorithmRule& rule = *plan.rule;
  if (rule.algorithm == Algorithm::kDirect && params_.single_host && !params_.deterministic &&
      !args.kernel.scalesInput() && static_cast<size_t>(params_.nranks) <= kMaxDirectOutputs) {
    plan.direct = args;
    plan.direct.streaming = rule.streaming;
    plan.direct_bytes = bytes;
    plan.direct.cma = rule.cma;
    plan.tries_direct = true;
    std::copy_backward(plan.stages.begin(), plan.stages.begin() + plan.nstages, plan.stages.begin() + plan.nstages + 1);
    plan.stages[0] = Stage::kDirect;
    ++plan.nstages;
  }
  return makeTask(op, plan, std::move(offsets));
}

// A caller whose buffers are private pays one small-message round per operation for nothing; after each
// operation that could not run direct the next 1, 2, 4, ... up to its rule's back-off skip the offers, and one
// that ran direct resets that (a rule with no back-off, PSDP_ALGORITHM=direct's included, tries every time and
// leaves the count alone). Every rank sees the same outcomes (the decision is a function of all offers) and
// applies them at the same points of the sequence (when the task kMaxTasksInFlight later starts in the same
// slot), so every rank skips the same operations.
bool HostCollectives::skipDirect(const AlgorithmRule& rule) {
  if (rule.backoff == 0 || direct_skips_left_ == 0) return false;
  --direct_skips_left_;
  return true;
}

void HostCollectives::applyDirectOutcome(DirectOutcome outcome, int backoff) {
  switch (outcome) {
    case DirectOutcome::kNone:
    case DirectOutcome::kFellBackTransient: return;
    case DirectOutcome::kRan: direct_backoff_ = direct_skips_left_ = 0; return;
    case DirectOutcome::kFellBack:
      if (backoff == 0) return;
      direct_backoff_ = std::min(backoff, std::max(1, 2 * direct_backoff_));
      direct_skips_left_ = direct_backoff_;
      return;
  }
}

DirectOutcome HostCollectives::directOutcome(const OpContext& op, bool ran, bool transient) {
  const Status& read_failure = direct_.memory().readFailure();
  if (!read_failure.isOk() && !read_failure_logged_) {
    read_failure_logged_ = true;
    log().info(
        "direct collectives cannot read the memory of other processes ({}); they run direct only on "
        "psdp_mem_alloc buffers",
        read_failure.message());
  }
  DirectOutcome outcome = ran         ? DirectOutcome::kRan
                          : transient ? DirectOutcome::kFellBackTransient
                                      : DirectOutcome::kFellBack;
  // Described only when printed: no allocation per operation otherwise.
  if (!log().should_log(spdlog::level::debug)) return outcome;
  switch (outcome) {
    case DirectOutcome::kRan: log().debug("{}: ran direct", op.describe()); break;
    case DirectOutcome::kFellBackTransient:
      log().debug(
          "{}: falling back: some rank would read another's memory, which is not (or not yet known to be) "
          "worth it",
          op.describe());
      break;
    case DirectOutcome::kFellBack:
    case DirectOutcome::kNone:
      log().debug(
          "{}: some rank's buffers are out of direct reach (another host, or no reads of other processes and no "
          "psdp_mem_alloc buffers): falling back; from #{} on, operations skip trying for a while",
          op.describe(), op.header.seq + kMaxTasksInFlight);
      break;
  }
  return outcome;
}

void HostCollectives::logStart(const OpContext& op, const TaskPlan& plan, bool tries_direct) const {
  // The reason is formatted only when it will be printed: no allocation per operation otherwise.
  if (!log().should_log(spdlog::level::debug)) return;
  std::string why = fmt::format(", rule {} ({})", AlgorithmTable::formatRule(*plan.rule), plan.rule->originText());
  switch (plan.choice) {
    case Choice::kRule: break;
    case Choice::kDeterministic: why = ", PSDP_DETERMINISTIC=1"; break;
    case Choice::kNotPowerOfTwo: why += ", but rhd needs a power-of-two rank count"; break;
    case Choice::kExceedsStaging: why += ", but rhd's vectors exceed one staging fragment"; break;
  }
  if (plan.stages[plan.tries_direct ? 1 : 0] == Stage::kExchange) {
    log().debug("{}: {}one message per pair of ranks, straight between the buffers, {} in flight per direction{}",
                op.describe(), tries_direct ? "direct where every rank's buffers are reachable, else " : "", plan.depth,
                why);
    return;
  }
  if (plan.recursive) {
    RecursiveGroup group(params_.rank, params_.nranks);
    const char* name = plan.stages[0] == Stage::kRecursiveReduceScatter ? "recursive halving" : "recursive doubling";
    std::string folded = group.extra > 0 ? fmt::format(" ({} folded into a partner)", group.extra) : std::string();
    log().debug("{}: {}{} over {} ranks{}, {} steps{}", op.describe(),
                tries_direct ? "direct where every rank's buffers are reachable, else " : "", name, params_.nranks,
                folded, group.steps + (group.extra > 0 ? 2 : 0), why);
    return;
  }
  log().debug("{}: {}ring over {} ranks, fragments of {} elements, {} in flight per direction{}", op.describe(),
              tries_direct ? "direct where every rank's buffers are reachable, else " : "", params_.nranks,
              fragElems(plan, dtypeSize(op.header.dtype)), plan.depth, why);
}

void HostCollectives::fail(const OpContext& op, const Status& status) {
  std::lock_guard lock(failed_mutex_);
  if (!status.isOk() && failed_.isOk()) {
    failed_ = status;
    log().warn("{} failed, collectives of this communicator are now unusable: {}", op.describe(), status.toString());
  }
}

}  // namespace

Result<std::unique_ptr<Collectives>> createHostCollectives(transport::Transport& transport, const CollParams& params) {
  if (params.nranks < 1 || params.rank < 0 || params.rank >= params.nranks) {
    return Status::invalidArgument("rank {} of {} ranks", params.rank, params.nranks);
  }
  if (params.fragment_bytes < kMinFragmentBytes) {
    return Status::invalidArgument("fragment of {} bytes, below the minimum of {}", params.fragment_bytes,
                                   kMinFragmentBytes);
  }
  // Posting a task then allocates nothing: its memory is made now, and its stages run in its task slot.
  Recycled<HostTask>::prime(params.max_tasks);
  primePointToPointTasks(params.max_tasks);
  const size_t ring_task_bytes =
      2 * static_cast<size_t>(stagedDepth(params)) * StagingArena::slotStride(fragmentBytesToStage(params));
  PSDP_ASSIGN_OR_RETURN(StagingArena arena,
                        StagingArena::create(kStagedHostTasks * ring_task_bytes, kMaxTasksInFlight));
  PSDP_ASSIGN_OR_RETURN(DirectChannel::TileMemory tiles, DirectChannel::TileMemory::allocate());
  std::unique_ptr<transport::PeerMemory> peer_memory = transport.openPeerMemory();
  if (peer_memory->size() != params.nranks) {
    return Status::invalidArgument("collectives of {} ranks over a transport of {}", params.nranks,
                                   peer_memory->size());
  }
  return std::unique_ptr<Collectives>(
      std::make_unique<HostCollectives>(transport, params, std::move(arena), std::move(peer_memory), std::move(tiles)));
}

}  // namespace psdp::coll
