#include "coll/direct_phase.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "coll/ring_schedule.h"

namespace psdp::coll {
namespace {

// Local work (bytes reduced or copied) of one advance() at most: a large operation's share runs in slices,
// and the driver lets other operations move between them (Progress::kYielded). 4 MiB is 0.5-1 ms of
// reduction here, against a few microseconds per slice of overhead; as a multiple of every element size,
// cache line and fetch tile, it keeps slices on the boundaries the kernels work in.
constexpr size_t kDirectSliceBytes = size_t{4} << 20;

// Allocated and touched once, like all staging memory; null when out of memory.
std::byte* allocateTile() {
  void* tile = std::aligned_alloc(64, kDirectFetchTileBytes);
  if (tile != nullptr) std::memset(tile, 0, kDirectFetchTileBytes);
  return static_cast<std::byte*>(tile);
}

using PeerCompletion = transport::Completion DirectSlot::Peer::*;

}  // namespace

Result<DirectChannel::TileMemory> DirectChannel::TileMemory::allocate() {
  TileMemory tiles;
  tiles.result.reset(allocateTile());
  tiles.read.reset(allocateTile());
  if (!tiles.result || !tiles.read) {
    return Status::system("allocating 2 tiles of {} bytes for direct collectives: out of memory",
                          kDirectFetchTileBytes);
  }
  return tiles;
}

DirectSlot::DirectSlot(int nranks)
    : peers_(new Peer[static_cast<size_t>(nranks)]),
      offers_(static_cast<size_t>(nranks)),
      inputs_(static_cast<size_t>(nranks)),
      outputs_(static_cast<size_t>(nranks)) {}

Result<Progress> DirectPhase::advance() {
  switch (state_) {
    case State::kPost:
      PSDP_RETURN_IF_ERROR(postOffers());
      state_ = State::kOffers;
      return Progress::kAdvanced;
    case State::kOffers: {
      PSDP_ASSIGN_OR_RETURN(bool arrived, offersArrived());
      if (!arrived) return Progress::kBlocked;
      const transport::PeerMemory& memory = channel_.memory();
      const bool reachable = directReachable(memory, slot_.offers());
      uses_reads_ = needsPeerReads(memory, slot_.offers());
      ran_ = reachable && (!uses_reads_ || everyRuleAllowsReads(slot_.offers()));
      if (!ran_) {
        transient_ = reachable || peerReadsUndecided(slot_.offers());
        probeReads();
        state_ = State::kDone;
        return Progress::kAdvanced;
      }
      PSDP_RETURN_IF_ERROR(resolveBuffers());
      state_ = State::kShare;
      return Progress::kAdvanced;
    }
    case State::kShare: {
      PSDP_ASSIGN_OR_RETURN(bool shared, runSlice(shareBytes(), &DirectPhase::runShare));
      if (!shared) return Progress::kYielded;
      if (twoRounds()) {
        PSDP_RETURN_IF_ERROR(postRound(&DirectSlot::Peer::mid_sent, &DirectSlot::Peer::mid_received));
        state_ = State::kMid;
        return Progress::kAdvanced;
      }
      PSDP_RETURN_IF_ERROR(postRound(&DirectSlot::Peer::done_sent, &DirectSlot::Peer::done_received));
      state_ = State::kDone;
      return Progress::kAdvanced;
    }
    case State::kMid: {
      PSDP_ASSIGN_OR_RETURN(bool reduced, roundDone(&DirectSlot::Peer::mid_sent, &DirectSlot::Peer::mid_received));
      if (!reduced) return Progress::kBlocked;
      state_ = State::kGather;
      return Progress::kAdvanced;
    }
    case State::kGather: {
      PSDP_ASSIGN_OR_RETURN(bool gathered, runSlice(gatherBytes(), &DirectPhase::gatherBlocks));
      if (!gathered) return Progress::kYielded;
      PSDP_RETURN_IF_ERROR(postRound(&DirectSlot::Peer::done_sent, &DirectSlot::Peer::done_received));
      state_ = State::kDone;
      return Progress::kAdvanced;
    }
    case State::kDone: {
      // Every completion is reused by the next operation: even when the ring takes over, they settle first.
      PSDP_ASSIGN_OR_RETURN(bool offers, roundDone(&DirectSlot::Peer::offer_sent, &DirectSlot::Peer::offer_received));
      bool settled = offers;
      if (settled && twoRounds()) {
        PSDP_ASSIGN_OR_RETURN(settled, roundDone(&DirectSlot::Peer::mid_sent, &DirectSlot::Peer::mid_received));
      }
      if (settled && ran_) {
        PSDP_ASSIGN_OR_RETURN(settled, roundDone(&DirectSlot::Peer::done_sent, &DirectSlot::Peer::done_received));
      }
      if (!settled) return Progress::kBlocked;
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
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll: return bytes * static_cast<size_t>(op_.nranks);
    case OpKind::kScatter: return rank == args_.root ? bytes * static_cast<size_t>(op_.nranks) : 0;
    case OpKind::kBroadcast: return rank == args_.root ? bytes : 0;
    default: return bytes;
  }
}

// Only all-reduce touches other ranks' outputs.
size_t DirectPhase::offeredRecvBytes() const {
  return args_.kind == OpKind::kAllReduce ? args_.count * args_.elem_size : 0;
}

Status DirectPhase::postOffers() {
  DirectOffer& mine = slot_.offers()[static_cast<size_t>(op_.rank)];
  mine.send = transport::MemoryHandle::of(args_.send, offeredSendBytes(op_.rank));
  mine.recv = transport::MemoryHandle::of(args_.recv, offeredRecvBytes());
  mine.reads = channel_.memory().readAccess();
  mine.cma = args_.cma;
  slot_.outgoing() = encodeDirectOffer(mine);
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    DirectSlot::Peer& peer = slot_.peer(r);
    for (transport::Completion* c : {&peer.offer_received, &peer.offer_sent, &peer.mid_received, &peer.mid_sent,
                                     &peer.done_received, &peer.done_sent}) {
      c->reset();
    }
    PSDP_RETURN_IF_ERROR(
        op_.transport->recv(r, op_.tag, peer.incoming.data(), peer.incoming.size(), &peer.offer_received));
    PSDP_RETURN_IF_ERROR(
        op_.transport->send(r, op_.tag, slot_.outgoing().data(), slot_.outgoing().size(), &peer.offer_sent));
  }
  return Status::ok();
}

Result<bool> DirectPhase::offersArrived() {
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    const DirectSlot::Peer& peer = slot_.peer(r);
    if (!peer.offer_received.isDone()) return false;
    if (!peer.offer_received.status.isOk()) return peer.offer_received.status;
  }
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    Result<DirectOffer> offer = decodeDirectOffer(slot_.peer(r).incoming);
    if (!offer.isOk()) return offer.status().withContext(fmt::format("{} from rank {}", op_.describe(), r));
    slot_.offers()[static_cast<size_t>(r)] = offer.value();
  }
  return true;
}

// One byte of every other process of the host not yet read, while the ring runs this operation: its buffers
// stay valid until this rank has taken part. What is learnt goes into the next offers.
void DirectPhase::probeReads() {
  transport::PeerMemory& memory = channel_.memory();
  for (int r = 0; r < op_.nranks; ++r) {
    const DirectOffer& offer = slot_.offers()[static_cast<size_t>(r)];
    if (offer.send.bytes() == 0 || memory.place(op_.rank, r) != transport::PeerPlace::kSameHost) continue;
    memory.probeRead(r, offer.send.address());
    if (!memory.readFailure().isOk()) return;
  }
}

Status DirectPhase::resolveBuffers() {
  transport::PeerMemory& memory = channel_.memory();
  for (int r = 0; r < op_.nranks; ++r) {
    DirectSlot::Peer& peer = slot_.peer(r);
    if (r == op_.rank) {
      peer.send = DirectSource{args_.send};
      peer.recv = DirectSource{args_.recv};
      peer.recv_here = args_.recv;
      continue;
    }
    const DirectOffer& offer = slot_.offers()[static_cast<size_t>(r)];
    if (offer.send.bytes() != offeredSendBytes(r) || offer.recv.bytes() != offeredRecvBytes()) {
      return Status::mismatch("{}: rank {} offered buffers of {} and {} bytes, this rank expected {} and {}",
                              op_.describe(), r, offer.send.bytes(), offer.recv.bytes(), offeredSendBytes(r),
                              offeredRecvBytes());
    }
    if (memory.place(op_.rank, r) == transport::PeerPlace::kSameProcess) {
      peer.send = DirectSource{reinterpret_cast<const std::byte*>(offer.send.address())};
      peer.recv_here = reinterpret_cast<std::byte*>(offer.recv.address());
      peer.recv = DirectSource{peer.recv_here};
      continue;
    }
    if (!mapsBuffers(memory, op_.rank, offer, r)) {
      peer.send = DirectSource{nullptr, &memory, r, offer.send.address()};
      peer.recv = DirectSource{nullptr, &memory, r, offer.recv.address()};
      peer.recv_here = nullptr;
      continue;
    }
    peer.send = DirectSource{};
    peer.recv_here = nullptr;
    if (offer.send.bytes() > 0) {
      Result<std::byte*> send = memory.map(r, offer.send);
      if (!send.isOk()) return send.status().withContext(fmt::format("{}: rank {}'s send buffer", op_.describe(), r));
      peer.send = DirectSource{send.value()};
    }
    if (offer.recv.bytes() > 0) {
      Result<std::byte*> recv = memory.map(r, offer.recv);
      if (!recv.isOk()) return recv.status().withContext(fmt::format("{}: rank {}'s recv buffer", op_.describe(), r));
      peer.recv_here = recv.value();
    }
    peer.recv = DirectSource{peer.recv_here};
  }
  return Status::ok();
}

// Blocks start on cache lines of every output that starts on one (psdp_mem_alloc buffers start on pages). A
// block starting mid-line made each 256-byte store tile end and begin with plain stores into lines that
// streaming stores also wrote, which evicts the line each time: at 3 ranks, where 64 MiB of float32 split 24
// and 44 bytes past a line, all-reduce on psdp_mem_alloc buffers ran at half the speed of private ones.
BlockLayout DirectPhase::allReduceBlocks() const {
  return BlockLayout(args_.count, op_.nranks, std::max<size_t>(1, kDirectBlockAlignBytes / args_.elem_size));
}

Result<bool> DirectPhase::runSlice(size_t total, Status (DirectPhase::*run)(size_t, size_t)) {
  const size_t to = std::min(total, slice_done_ + kDirectSliceBytes);
  PSDP_RETURN_IF_ERROR((this->*run)(slice_done_, to));
  slice_done_ = to;
  if (to < total) return false;
  slice_done_ = 0;
  return true;
}

size_t DirectPhase::shareBytes() const {
  const size_t bytes = args_.count * args_.elem_size;
  switch (args_.kind) {
    case OpKind::kReduceScatter:
    case OpKind::kBroadcast: return bytes;
    case OpKind::kReduce: return op_.rank == args_.root ? bytes : 0;
    case OpKind::kAllReduce: return allReduceBlocks().size(op_.rank) * args_.elem_size;
    case OpKind::kAllGather:
    case OpKind::kAllToAll: return bytes * static_cast<size_t>(op_.nranks);
    case OpKind::kGather: return op_.rank == args_.root ? bytes * static_cast<size_t>(op_.nranks) : 0;
    case OpKind::kScatter: return bytes;
    default: return 0;  // the barrier, and the kinds that never run direct
  }
}

// Each rank's share never overlaps another's: reduce-scatter and all-reduce rank r reduce block r only (of
// every rank's input; into every output for an all-reduce over addressable buffers); all-gather and
// broadcast rank r writes only its own output; the reduce's root reduces every input into its output, and
// the gather's copies every rank's block into it (the other ranks only lend their inputs); scatter and
// all-to-all rank r copies its block out of the root's, or every rank's, input into its own output. In place, block r
// of an input is read, a tile at a time, before the same tile is written. [from, to) are bytes of the share's results.
Status DirectPhase::runShare(size_t from, size_t to) {
  const int n = op_.nranks;
  const size_t esize = args_.elem_size;
  const size_t count = (to - from) / esize;
  std::vector<DirectSource>& inputs = slot_.inputs();
  std::vector<std::byte*>& outputs = slot_.outputs();
  std::byte* const mine = args_.recv;
  switch (args_.kind) {
    case OpKind::kReduceScatter: {
      const size_t offset = static_cast<size_t>(op_.rank) * args_.count * esize + from;
      for (int r = 0; r < n; ++r) inputs[static_cast<size_t>(r)] = slot_.peer(r).send.at(offset);
      std::byte* const out = mine + from;
      return directReduce(args_.kernel, inputs, std::span<std::byte* const>(&out, 1), count, esize, n, channel_.tiles(),
                          args_.streaming);
    }
    case OpKind::kReduce: {
      if (op_.rank != args_.root) return Status::ok();
      for (int r = 0; r < n; ++r) inputs[static_cast<size_t>(r)] = slot_.peer(r).send.at(from);
      std::byte* const out = mine + from;
      return directReduce(args_.kernel, inputs, std::span<std::byte* const>(&out, 1), count, esize, n, channel_.tiles(),
                          args_.streaming);
    }
    case OpKind::kAllReduce: {
      const size_t offset = allReduceBlocks().offset(op_.rank) * esize + from;
      for (int r = 0; r < n; ++r) inputs[static_cast<size_t>(r)] = slot_.peer(r).send.at(offset);
      if (uses_reads_) {
        std::byte* const own_block = mine + offset;
        return directReduce(args_.kernel, inputs, std::span<std::byte* const>(&own_block, 1), count, esize, n,
                            channel_.tiles(), args_.streaming);
      }
      for (int r = 0; r < n; ++r) outputs[static_cast<size_t>(r)] = slot_.peer(r).recv_here + offset;
      return directReduce(args_.kernel, inputs, outputs, count, esize, n, channel_.tiles(), args_.streaming);
    }
    case OpKind::kAllGather:
    case OpKind::kGather:
    case OpKind::kAllToAll: {
      // Rank r's block lands at r * bytes of the output; of an all-to-all, it is block `rank` of r's input.
      const size_t bytes = args_.count * esize;
      const size_t from_input = args_.kind == OpKind::kAllToAll ? static_cast<size_t>(op_.rank) * bytes : 0;
      if (args_.kind == OpKind::kGather && op_.rank != args_.root) return Status::ok();
      for (int r = 0; r < n; ++r) {
        const size_t begin = static_cast<size_t>(r) * bytes;
        const size_t lo = std::max(from, begin), hi = std::min(to, begin + bytes);
        if (lo >= hi) continue;
        PSDP_RETURN_IF_ERROR(
            directCopy(mine + lo, slot_.peer(r).send.at(from_input + lo - begin), hi - lo, args_.streaming));
      }
      return Status::ok();
    }
    case OpKind::kBroadcast:
      return directCopy(mine + from, slot_.peer(args_.root).send.at(from), to - from, args_.streaming);
    case OpKind::kScatter: {
      const size_t own_block = static_cast<size_t>(op_.rank) * args_.count * esize;
      return directCopy(mine + from, slot_.peer(args_.root).send.at(own_block + from), to - from, args_.streaming);
    }
    default: return Status::ok();  // the barrier, and the kinds that never run direct
  }
}

size_t DirectPhase::gatherBytes() const {
  return (args_.count - allReduceBlocks().size(op_.rank)) * args_.elem_size;
}

// The second half of an all-reduce that reads its peers: every block but this rank's, from the output of its owner,
// who has reduced it there (the middle round says so). [from, to) are bytes of those blocks end to end.
Status DirectPhase::gatherBlocks(size_t from, size_t to) {
  BlockLayout layout = allReduceBlocks();
  const size_t esize = args_.elem_size;
  size_t begin = 0;  // where block r starts among the gathered bytes
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    const size_t offset = layout.offset(r) * esize, bytes = layout.size(r) * esize;
    const size_t lo = std::max(from, begin), hi = std::min(to, begin + bytes);
    if (lo < hi) {
      const size_t at = offset + (lo - begin);
      PSDP_RETURN_IF_ERROR(directCopy(args_.recv + at, slot_.peer(r).recv.at(at), hi - lo, args_.streaming));
    }
    begin += bytes;
  }
  return Status::ok();
}

Status DirectPhase::postRound(PeerCompletion sent, PeerCompletion received) {
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    DirectSlot::Peer& peer = slot_.peer(r);
    PSDP_RETURN_IF_ERROR(op_.transport->recv(r, op_.tag, nullptr, 0, &(peer.*received)));
    PSDP_RETURN_IF_ERROR(op_.transport->send(r, op_.tag, nullptr, 0, &(peer.*sent)));
  }
  return Status::ok();
}

Result<bool> DirectPhase::roundDone(PeerCompletion sent, PeerCompletion received) const {
  bool all = true;
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    const DirectSlot::Peer& peer = slot_.peer(r);
    for (const transport::Completion* c : {&(peer.*sent), &(peer.*received)}) {
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
  PeerCompletion sent = &DirectSlot::Peer::offer_sent;
  PeerCompletion received = &DirectSlot::Peer::offer_received;
  const char* what = "direct offers";
  if (state_ == State::kMid) {
    sent = &DirectSlot::Peer::mid_sent;
    received = &DirectSlot::Peer::mid_received;
    what = "reduced blocks";
  } else if (state_ == State::kDone && ran_) {
    sent = &DirectSlot::Peer::done_sent;
    received = &DirectSlot::Peer::done_received;
    what = "direct completion";
  }
  std::string peers;
  for (int r = 0; r < op_.nranks; ++r) {
    if (r == op_.rank) continue;
    const DirectSlot::Peer& peer = slot_.peer(r);
    if ((peer.*sent).isDone() && (peer.*received).isDone()) continue;
    peers += fmt::format("{}{}", peers.empty() ? "" : ", ", r);
  }
  if (peers.empty()) return fmt::format("nothing in the direct phase");
  return fmt::format("the {} of peers {}", what, peers);
}

}  // namespace psdp::coll
