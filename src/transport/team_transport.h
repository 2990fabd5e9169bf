// A team's view of a transport that several teams (communicators) of one process share: the team's ranks
// map to the transport's (context) ranks, and a failure stays within the team. The collectives of a team run
// over its view exactly as over a transport of their own; they put the team's context id in every tag
// (coll/tag.h), which keeps the teams' messages apart on the shared worker.
//
// Failure: the view fails when any member's process is lost, when a member reports the team failed (a
// timeout, an abort, a mismatch there), or when fail() is called on it; other teams of the transport go on.
// failure() is cheap: it looks again only when the transport has recorded a failure since the last look.
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "transport/transport.h"

namespace psdp::transport {

class TeamTransport final : public Transport {
 public:
  // members[i]: the transport rank of team rank i; `rank` is this process's team rank. REQUIRES: `shared`
  // is connected and outlives the view; members are distinct valid ranks of it.
  TeamTransport(Transport& shared, ContextId context, std::vector<int> members, int rank);

  const char* name() const override { return shared_.name(); }
  Capabilities capabilities() const override { return shared_.capabilities(); }
  ContextId context() const { return context_; }
  const std::vector<int>& members() const { return members_; }

  // The shared transport is addressed and connected by its owner: invalid usage here.
  Result<std::vector<std::byte>> localAddress() override;
  Status connect(const std::vector<std::vector<std::byte>>& addresses, const Deadline& deadline) override;

  // The shared transport's, over this team's ranks.
  std::unique_ptr<PeerMemory> openPeerMemory() const override;
  std::vector<std::string> laneTransports(int peer) const override;

  // `tag` must carry this team's context id (invalid argument otherwise).
  Status send(int peer, Tag tag, const void* buf, size_t bytes, Completion* completion) override;
  Status recv(int peer, Tag tag, void* buf, size_t bytes, Completion* completion) override;
  uint32_t eventCount() const override { return shared_.eventCount(); }
  Status waitEvents(uint32_t seen, const Deadline& deadline) override { return shared_.waitEvents(seen, deadline); }
  void wake() override { shared_.wake(); }
  void beginDriving() override { shared_.beginDriving(); }
  void endDriving() override { shared_.endDriving(); }

  // Fails this team only (Transport::failContext): its members are told, its operations complete.
  void fail(const Status& reason) override;
  // The team's first failure: its own or a member's report, or a member's loss (in team ranks); a member
  // whose loss is an echo (Transport::peerFailureIsEcho) only when no other member's explains it.
  Status failure() const override;
  void failContext(ContextId context, const std::vector<int>& peers, const Status& reason) override;
  Status contextFailure(ContextId context) const override { return shared_.contextFailure(context); }
  Status peerFailure(int peer) const override;
  bool peerFailureIsEcho(int peer) const override;
  void refreshFailures() override { shared_.refreshFailures(); }
  // The shared transport's probe of the members, in team ranks.
  std::vector<SilentPeer> probePeers(const std::vector<int>& peers, double seconds) override;
  uint32_t failureEpoch() const override { return shared_.failureEpoch(); }

  // This team's drain, over the shared transport's context-level forms.
  void drain(uint32_t from, const Status& reason) override;
  std::optional<std::pair<uint32_t, Status>> drainPoint() const override;
  void failDrained(const Status& reason) override;
  void drainContext(ContextId context, const std::vector<int>& peers, uint32_t from, const Status& reason) override;
  std::optional<std::pair<uint32_t, Status>> contextDrain(ContextId context) const override {
    return shared_.contextDrain(context);
  }
  // The shared transport's threads are its owner's to stop.
  void stopThreads() override {}
  // Nothing to close: the shared transport closes when its last team is gone.
  Status close(const Deadline& deadline) override;

 private:
  Status checkPeer(int peer, Tag tag) const;
  std::vector<int> inContextRanks(const std::vector<int>& peers) const;
  Status inTeamRanks(const Status& status) const;

  Transport& shared_;
  const ContextId context_;
  const std::vector<int> members_;
  const int rank_;
  mutable std::mutex mutex_;
  mutable Status failure_;              // GUARDED_BY(mutex_)
  mutable uint32_t checked_epoch_ = 0;  // GUARDED_BY(mutex_): the epoch failure_ reflects
  mutable std::atomic<bool> failed_{false};
};

}  // namespace psdp::transport
