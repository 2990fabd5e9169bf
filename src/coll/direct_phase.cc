#include "coll/direct_phase.h"

#include <fmt/format.h>

#include <new>
#include <string>

#include "coll/direct_kernels.h"
#include "coll/ring_schedule.h"

namespace psdp::coll {
namespace {

// Peers' segments kept mapped: enough for the buffers of many operations in turn (a framework's buckets),
// few enough that segments their owners have freed do not pin much memory here for long.
constexpr size_t kMinCachedSegments = 64;

std::byte* allocateTile() {
  void* tile = std::aligned_alloc(64, kDirectTileBytes);
  if (tile == nullptr) throw std::bad_alloc();
  return static_cast<std::byte*>(tile);
}

}  // namespace

DirectChannel::DirectChannel(int nranks)
    : peers_(new Peer[static_cast<size_t>(nranks)]),
      segments_(std::max(kMinCachedSegments, 4 * static_cast<size_t>(nranks))),
      offers_(static_cast<size_t>(nranks)),
      inputs_(static_cast<size_t>(nranks)),
      outputs_(static_cast<size_t>(nranks)),
      tile_(allocateTile()) {}

Result<Progress> DirectPhase::advance() {
  switch (state_) {
    case State::kPost:
      PSDP_RETURN_IF_ERROR(postOffers());
      state_ = State::kOffers;
      return Progress::kAdvanced;
    case State::kOffers: {
      PSDP_ASSIGN_OR_RETURN(bool arrived, offersArrived());
      if (!arrived) return Progress::kBlocked;
      ran_ = directReachable(channel_.offers());
      if (ran_) {
        PSDP_RETURN_IF_ERROR(resolveBuffers());
        runShare();
        PSDP_RETURN_IF_ERROR(postDone());
      }
      state_ = State::kDone;
      return Progress::kAdvanced;
    }
    case State::kDone: {
      // The offer completions are reused by the next operation: even when the ring takes over, they settle first.
      PSDP_ASSIGN_OR_RETURN(bool settled_now, settled(/*offers_only=*/!ran_));
      if (!settled_now) return Progress::kBlocked;
      state_ = State::kFinished;
      return Progress::kDone;
    }
    case State::kFinished: return Progress::kDone;
  }
  return Progress::kDone;
}

size_t DirectPhase::offeredSendBytes(int rank) const {
  const size_t bytes = args_.count * args_.elem_size;
  switch (args_.kind) {
    case OpKind::kReduceScatter: return bytes * static_cast<size_t>(op_.nranks);
    case OpKind::kBroadcast: return rank == args_.root ? bytes : 0;
    default: return bytes;
  }
}

// Only all-reduce writes into other ranks' buffers.
size_t DirectPhase::offeredRecvBytes() const {
  return args_.kind == OpKind::kAllReduce ? args_.count * args_.elem_size : 0;
}

Status DirectPhase::postOffers() {
  DirectOffer& mine = channel_.offers()[static_cast<size_t>(op_.rank)];
  mine.process = transport::ProcessIdentity::self();
  mine.send = BufferOffer::of(args_.send, offeredSendBytes(op_.rank));
  mine.recv = BufferOffer::of(args_.recv, offeredRecvBytes());
  channel_.outgoing() = encodeDirectOffer(mine);
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    DirectChannel::Peer& peer = channel_.peer(r);
    peer.offer_received.reset();
    peer.offer_sent.reset();
    peer.done_received.reset();
    peer.done_sent.reset();
    PSDP_RETURN_IF_ERROR(
        op_.transport->recv(r, op_.tag, peer.incoming.data(), peer.incoming.size(), &peer.offer_received));
    PSDP_RETURN_IF_ERROR(
        op_.transport->send(r, op_.tag, channel_.outgoing().data(), channel_.outgoing().size(), &peer.offer_sent));
  }
  return Status::ok();
}

Result<bool> DirectPhase::offersArrived() {
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    const DirectChannel::Peer& peer = channel_.peer(r);
    if (!peer.offer_received.isDone()) return false;
    if (!peer.offer_received.status.isOk()) return peer.offer_received.status;
  }
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    Result<DirectOffer> offer = decodeDirectOffer(channel_.peer(r).incoming);
    if (!offer.isOk()) return offer.status().withContext(fmt::format("{} from rank {}", op_.describe(), r));
    channel_.offers()[static_cast<size_t>(r)] = offer.value();
  }
  return true;
}

Status DirectPhase::resolveBuffers() {
  const transport::ProcessIdentity& self = transport::ProcessIdentity::self();
  for (int r = 0; r < op_.nranks; ++r) {
    DirectChannel::Peer& peer = channel_.peer(r);
    if (r == op_.rank) {
      peer.send = args_.send;
      peer.recv = args_.recv;
      continue;
    }
    const DirectOffer& offer = channel_.offers()[static_cast<size_t>(r)];
    if (offer.send.bytes != offeredSendBytes(r) || offer.recv.bytes != offeredRecvBytes()) {
      return Status::mismatch("{}: rank {} offered buffers of {} and {} bytes, this rank expected {} and {}",
                              op_.describe(), r, offer.send.bytes, offer.recv.bytes, offeredSendBytes(r),
                              offeredRecvBytes());
    }
    if (sameProcess(self, offer.process)) {
      peer.send = reinterpret_cast<const std::byte*>(offer.send.address);
      peer.recv = reinterpret_cast<std::byte*>(offer.recv.address);
      continue;
    }
    peer.send = nullptr;
    peer.recv = nullptr;
    if (offer.send.bytes > 0) {
      Result<std::byte*> send = channel_.segments().map(offer.process, offer.send.segment, offer.send.bytes);
      if (!send.isOk()) return send.status().withContext(fmt::format("{}: rank {}'s send buffer", op_.describe(), r));
      peer.send = send.value();
    }
    if (offer.recv.bytes > 0) {
      Result<std::byte*> recv = channel_.segments().map(offer.process, offer.recv.segment, offer.recv.bytes);
      if (!recv.isOk()) return recv.status().withContext(fmt::format("{}: rank {}'s recv buffer", op_.describe(), r));
      peer.recv = recv.value();
    }
  }
  return Status::ok();
}

// Each rank's share never overlaps another's: reduce-scatter and all-reduce rank r reduce block r only (of
// every rank's input, into every output for all-reduce); all-gather and broadcast rank r writes only its own
// output. In place, block r of an input is read, a tile at a time, before the same tile is written.
void DirectPhase::runShare() {
  const int n = op_.nranks;
  const size_t esize = args_.elem_size;
  std::vector<const std::byte*>& inputs = channel_.inputs();
  std::vector<std::byte*>& outputs = channel_.outputs();
  const DirectChannel::Peer& me = channel_.peer(op_.rank);
  switch (args_.kind) {
    case OpKind::kReduceScatter: {
      const size_t offset = static_cast<size_t>(op_.rank) * args_.count * esize;
      for (int r = 0; r < n; ++r) inputs[static_cast<size_t>(r)] = channel_.peer(r).send + offset;
      std::byte* output = me.recv;
      directReduce(args_.kernel, inputs, std::span<std::byte* const>(&output, 1), args_.count, esize, n,
                   channel_.tile(), args_.streaming);
      return;
    }
    case OpKind::kAllReduce: {
      BlockLayout layout(args_.count, n);
      const size_t offset = layout.offset(op_.rank) * esize;
      for (int r = 0; r < n; ++r) {
        inputs[static_cast<size_t>(r)] = channel_.peer(r).send + offset;
        outputs[static_cast<size_t>(r)] = channel_.peer(r).recv + offset;
      }
      directReduce(args_.kernel, inputs, outputs, layout.size(op_.rank), esize, n, channel_.tile(), args_.streaming);
      return;
    }
    case OpKind::kAllGather: {
      const size_t bytes = args_.count * esize;
      for (int r = 0; r < n; ++r)
        directCopy(me.recv + static_cast<size_t>(r) * bytes, channel_.peer(r).send, bytes, args_.streaming);
      return;
    }
    case OpKind::kBroadcast:
      directCopy(me.recv, channel_.peer(args_.root).send, args_.count * esize, args_.streaming);
      return;
    case OpKind::kBarrier: return;
  }
}

Status DirectPhase::postDone() {
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    DirectChannel::Peer& peer = channel_.peer(r);
    PSDP_RETURN_IF_ERROR(op_.transport->recv(r, op_.tag, nullptr, 0, &peer.done_received));
    PSDP_RETURN_IF_ERROR(op_.transport->send(r, op_.tag, nullptr, 0, &peer.done_sent));
  }
  return Status::ok();
}

Result<bool> DirectPhase::settled(bool offers_only) const {
  bool all = true;
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    const DirectChannel::Peer& peer = channel_.peer(r);
    for (const transport::Completion* c : {&peer.offer_sent, &peer.done_sent, &peer.done_received}) {
      if (offers_only && c != &peer.offer_sent) continue;
      if (!c->isDone()) {
        all = false;
      } else if (!c->status.isOk()) {
        return c->status;
      }
    }
  }
  return all;
}

std::string DirectPhase::waitingFor() const {
  std::string offers, dones;
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    const DirectChannel::Peer& peer = channel_.peer(r);
    bool offer_missing = !peer.offer_received.isDone() || !peer.offer_sent.isDone();
    bool done_missing = state_ == State::kDone && ran_ && (!peer.done_received.isDone() || !peer.done_sent.isDone());
    std::string& list = offer_missing ? offers : dones;
    if (offer_missing || done_missing) list += fmt::format("{}{}", list.empty() ? "" : ", ", r);
  }
  std::string text;
  if (!offers.empty()) text = fmt::format("the direct offers of peers {}", offers);
  if (!dones.empty()) text += fmt::format("{}the direct completion of peers {}", text.empty() ? "" : " and ", dones);
  return text.empty() ? "nothing in the direct phase" : text;
}

}  // namespace psdp::coll
