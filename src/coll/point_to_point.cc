#include "coll/point_to_point.h"

#include <fmt/format.h>

#include <string>

#include "base/recycled.h"

namespace psdp::coll {

CompletionPool::CompletionPool(size_t size) : completions_(new transport::Completion[size]) {
  free_.reserve(size);
  for (size_t i = size; i > 0; --i) free_.push_back(&completions_[i - 1]);
}

transport::Completion* CompletionPool::take() {
  std::lock_guard lock(mutex_);
  if (free_.empty()) return nullptr;
  transport::Completion* completion = free_.back();
  free_.pop_back();
  return completion;
}

void CompletionPool::give(transport::Completion* completion) {
  std::lock_guard lock(mutex_);
  free_.push_back(completion);  // within the capacity reserved for all of them
}

namespace {

class PointToPointTask final : public CollTask, public Recycled<PointToPointTask> {
 public:
  PointToPointTask(PointToPointOwner& owner, const OpContext& op, const PointToPointArgs& args)
      : owner_(owner), op_(op), args_(args) {}
  ~PointToPointTask() override {
    if (completion_ == nullptr) return;
    if (!posted_ || completion_->isDone()) owner_.completions().give(completion_);
  }

  std::string describe() const override { return op_.describe(); }
  std::optional<uint32_t> seq() const override { return std::nullopt; }
  bool canStart() const override { return !started_; }

  void start(const Deadline& deadline) override {
    deadline_ = deadline;
    started_ = true;
    completion_ = owner_.completions().take();
  }

  Result<Progress> advance() override {
    if (completion_ == nullptr) {
      // Every completion lent: more transfers in flight than the queue admits tasks, so one completes first.
      completion_ = owner_.completions().take();
      if (completion_ == nullptr) return Progress::kBlocked;
    }
    if (!posted_) {
      completion_->reset();
      Status posted = args_.send ? op_.transport->send(args_.peer, op_.tag, args_.data, args_.bytes, completion_)
                                 : op_.transport->recv(args_.peer, op_.tag, args_.data, args_.bytes, completion_);
      if (!posted.isOk()) return failed(posted);
      posted_ = true;
    }
    if (!completion_->isDone()) return Progress::kBlocked;
    if (!completion_->status.isOk()) return failed(completion_->status);
    return Progress::kDone;
  }

  std::string waitingFor() const override {
    return fmt::format("peer {} (its matching {} of {} bytes)", args_.peer, args_.send ? "psdp_recv" : "psdp_send",
                       args_.bytes);
  }

  void abandon(const Status& status) override { owner_.fail(op_, status); }

 private:
  Status failed(const Status& status) {
    Status named = status.withContext(op_.describe());
    owner_.fail(op_, named);
    return named;
  }

  PointToPointOwner& owner_;
  OpContext op_;
  PointToPointArgs args_;
  transport::Completion* completion_ = nullptr;
  bool started_ = false;
  bool posted_ = false;
};

}  // namespace

std::unique_ptr<CollTask> makePointToPointTask(PointToPointOwner& owner, const OpContext& op,
                                               const PointToPointArgs& args) {
  return std::make_unique<PointToPointTask>(owner, op, args);
}

void primePointToPointTasks(size_t n) {
  Recycled<PointToPointTask>::prime(n);
}

}  // namespace psdp::coll
