#include "transport/team_transport.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <utility>

#include "transport/peer_memory.h"

namespace psdp::transport {

TeamTransport::TeamTransport(Transport& shared, ContextId context, std::vector<int> members, int rank)
    : shared_(shared), context_(context), members_(std::move(members)), rank_(rank) {
  // Epoch 0 is a transport that never failed; anything later is looked at by the first failure().
  checked_epoch_ = shared_.failureEpoch() - 1;
}

Result<std::vector<std::byte>> TeamTransport::localAddress() {
  return Status::invalidUsage("team transport: the shared transport has the address");
}

Status TeamTransport::connect(const std::vector<std::vector<std::byte>>& /*addresses*/, const Deadline& /*deadline*/) {
  return Status::invalidUsage("team transport: the shared transport is connected by its owner");
}

std::unique_ptr<PeerMemory> TeamTransport::openPeerMemory() const {
  return shared_.openPeerMemory()->subset(members_, rank_);
}

std::vector<std::string> TeamTransport::laneTransports(int peer) const {
  if (peer < 0 || peer >= static_cast<int>(members_.size())) return {};
  return shared_.laneTransports(members_[static_cast<size_t>(peer)]);
}

// Team ranks (every other member when empty; out-of-range ones dropped) to the shared transport's ranks.
std::vector<int> TeamTransport::inContextRanks(const std::vector<int>& peers) const {
  std::vector<int> mapped;
  mapped.reserve(members_.size());
  for (size_t i = 0; i < members_.size(); ++i) {
    const bool named = peers.empty() ? static_cast<int>(i) != rank_
                                     : std::find(peers.begin(), peers.end(), static_cast<int>(i)) != peers.end();
    if (named) mapped.push_back(members_[i]);
  }
  return mapped;
}

Status TeamTransport::checkPeer(int peer, Tag tag) const {
  if (peer < 0 || peer >= static_cast<int>(members_.size())) {
    return Status::invalidArgument("peer {} out of range [0, {})", peer, members_.size());
  }
  if (contextOf(tag) != context_) {
    return Status::invalidArgument("tag {:#x} is not of context {:#x}", tag, context_);
  }
  if (failed_.load(std::memory_order_acquire)) return failure();
  return Status::ok();
}

Status TeamTransport::send(int peer, Tag tag, const void* buf, size_t bytes, Completion* completion) {
  PSDP_RETURN_IF_ERROR(checkPeer(peer, tag));
  return shared_.send(members_[static_cast<size_t>(peer)], tag, buf, bytes, completion);
}

Status TeamTransport::recv(int peer, Tag tag, void* buf, size_t bytes, Completion* completion) {
  PSDP_RETURN_IF_ERROR(checkPeer(peer, tag));
  return shared_.recv(members_[static_cast<size_t>(peer)], tag, buf, bytes, completion);
}

void TeamTransport::fail(const Status& reason) {
  {
    std::lock_guard lock(mutex_);
    if (failure_.isOk()) failure_ = reason;
    failed_.store(true, std::memory_order_release);
  }
  shared_.failContext(context_, inContextRanks({}), reason);
}

void TeamTransport::failContext(ContextId context, const std::vector<int>& peers, const Status& reason) {
  shared_.failContext(context, peers.empty() ? peers : inContextRanks(peers), reason);
}

bool TeamTransport::peerFailureIsEcho(int peer) const {
  return peer >= 0 && peer < static_cast<int>(members_.size()) &&
         shared_.peerFailureIsEcho(members_[static_cast<size_t>(peer)]);
}

Status TeamTransport::peerFailure(int peer) const {
  if (peer < 0 || peer >= static_cast<int>(members_.size())) {
    return Status::invalidArgument("peer {} out of range [0, {})", peer, members_.size());
  }
  return inTeamRanks(shared_.peerFailure(members_[static_cast<size_t>(peer)]));
}

// The shared transport names peers by their ranks there ("peer 5 failed: ..."), the team's users know them
// by their ranks in the team: a status that begins by naming a member says the team rank, the other in
// brackets.
Status TeamTransport::inTeamRanks(const Status& status) const {
  constexpr std::string_view kPeer = "peer ";
  std::string_view message = status.message();
  if (status.isOk() || message.substr(0, kPeer.size()) != kPeer) return status;
  int shared_rank = -1;
  const char* begin = message.data() + kPeer.size();
  auto [end, error] = std::from_chars(begin, message.data() + message.size(), shared_rank);
  if (error != std::errc() || end == message.data() + message.size() || *end != ' ') return status;
  auto member = std::find(members_.begin(), members_.end(), shared_rank);
  if (member == members_.end()) return status;
  const int team_rank = static_cast<int>(member - members_.begin());
  if (team_rank == shared_rank) return status;
  return Status::make(status.code(), "peer {}{} (rank {} of the context)", team_rank,
                      message.substr(static_cast<size_t>(end - message.data())), shared_rank);
}

Status TeamTransport::failure() const {
  uint32_t epoch = shared_.failureEpoch();
  std::lock_guard lock(mutex_);
  if (!failure_.isOk() || epoch == checked_epoch_) return failure_;
  checked_epoch_ = epoch;
  Status found = inTeamRanks(shared_.contextFailure(context_));
  for (bool echo : {false, true}) {
    for (size_t i = 0; found.isOk() && i < members_.size(); ++i) {
      if (shared_.peerFailureIsEcho(members_[i]) == echo) found = inTeamRanks(shared_.peerFailure(members_[i]));
    }
  }
  if (!found.isOk()) {
    failure_ = found;
    failed_.store(true, std::memory_order_release);
  }
  return failure_;
}

void TeamTransport::drain(uint32_t from, const Status& reason) {
  shared_.drainContext(context_, inContextRanks({}), from, reason);
}

std::optional<std::pair<uint32_t, Status>> TeamTransport::drainPoint() const {
  std::optional<std::pair<uint32_t, Status>> point = shared_.contextDrain(context_);
  if (point) point->second = inTeamRanks(point->second);
  return point;
}

void TeamTransport::failDrained(const Status& reason) {
  {
    std::lock_guard lock(mutex_);
    if (failure_.isOk()) failure_ = reason;
    failed_.store(true, std::memory_order_release);
  }
  shared_.failContext(context_, {}, reason);
}

void TeamTransport::drainContext(ContextId context, const std::vector<int>& peers, uint32_t from,
                                 const Status& reason) {
  shared_.drainContext(context, peers.empty() ? peers : inContextRanks(peers), from, reason);
}

std::vector<SilentPeer> TeamTransport::probePeers(const std::vector<int>& peers, double seconds) {
  std::vector<int> others = inContextRanks(peers);
  if (others.empty()) return {};
  std::vector<SilentPeer> silent = shared_.probePeers(others, seconds);
  for (SilentPeer& peer : silent) {
    peer.rank = static_cast<int>(std::find(members_.begin(), members_.end(), peer.rank) - members_.begin());
  }
  std::sort(silent.begin(), silent.end(), [](const SilentPeer& a, const SilentPeer& b) { return a.rank < b.rank; });
  return silent;
}

Status TeamTransport::close(const Deadline& /*deadline*/) {
  return Status::ok();
}

}  // namespace psdp::transport
