// Direct collectives: on one host, when every rank can reach every other rank's buffers, each rank reduces
// or copies its share straight between the ranks' buffers (coll/direct_kernels.h), instead of passing
// fragments around a ring through staging. A rank reaches another's buffers in place when both are
// threads of one process or the buffers are shareable memory (psdp_mem_alloc, mapped here), and otherwise
// reads them out of the other process once it has found that it may (transport/peer_memory.h,
// coll/direct_offer.h). The phase:
//   1. sends its offer to every peer and receives theirs: one small message each way per pair;
//   2. if not every rank can reach every buffer it needs (directReachable: the same answer on every rank),
//      or some must read another process's memory and some rank's rule says not to (DirectArgs::cma, also
//      in the offers), it ends with ran() false and the task runs the ring instead, whose messages follow
//      the offers;
//   3. otherwise it maps the peers' segments (cached per communicator) and does this rank's share. An
//      all-reduce whose buffers are all addressable writes its block of the result into every rank's
//      output; one that needs reads, which cannot write, reduces its block into its own output, tells every
//      peer (a second small message each way), then reads the other blocks from the peers' outputs;
//   4. then tells every peer it is done and waits for every peer's word: no rank returns, and so hands its
//      buffers back to the caller, while another rank may still read or write them.
// A peer that dies after step 1 leaves its mapped pages valid here, and a read of it fails naming it;
// either way step 4 or that read reports it.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <vector>

#include "coll/direct_kernels.h"
#include "coll/direct_offer.h"
#include "coll/op_header.h"
#include "coll/progress_loop.h"
#include "coll/reduce_kernels.h"
#include "coll/ring_schedule.h"
#include "transport/peer_memory.h"

namespace psdp::coll {

struct DirectArgs {
  OpKind kind = OpKind::kAllReduce;
  const std::byte* send = nullptr;
  std::byte* recv = nullptr;
  // reduce-scatter, scatter: recvcount; all-gather, gather: sendcount; all-to-all: count per block; all-reduce,
  // broadcast, reduce: count
  size_t count = 0;
  size_t elem_size = 1;
  ReduceKernel kernel;    // reductions; never premul-sum, whose scalars are each rank's own
  int root = -1;          // broadcast, reduce, gather, scatter
  bool streaming = true;  // results may be stored with non-temporal stores (coll/direct_kernels.h)
  bool cma = true;        // may run direct where some rank reads another's memory (rule option cma)
};

// What direct operations keep between calls, allocated once per communicator: its peer memory (the peers'
// mapped buffers, what is known of reading them) and the tiles the local work runs through (used by one
// driving thread at a time).
class DirectChannel {
 public:
  // The two tiles of DirectTiles, allocated and touched once.
  class TileMemory {
   public:
    // Errors: system (out of memory).
    static Result<TileMemory> allocate();

   private:
    friend class DirectChannel;
    struct Free {
      void operator()(std::byte* p) const { std::free(p); }
    };
    std::unique_ptr<std::byte, Free> result, read;
  };

  // memory: the team's (Transport::openPeerMemory).
  DirectChannel(std::unique_ptr<transport::PeerMemory> memory, TileMemory tiles)
      : memory_(std::move(memory)), tiles_(std::move(tiles)) {}

  transport::PeerMemory& memory() { return *memory_; }
  const transport::PeerMemory& memory() const { return *memory_; }
  DirectTiles tiles() const { return {tiles_.result.get(), tiles_.read.get()}; }

 private:
  std::unique_ptr<transport::PeerMemory> memory_;
  TileMemory tiles_;
};

// What one direct operation exchanges and resolves, in memory of the task slot it runs in (several
// operations of a communicator run at once): the offer messages and the completions of its rounds with each
// peer, and the peers' buffers as this process reaches them.
class DirectSlot {
 public:
  explicit DirectSlot(int nranks);

  struct Peer {
    DirectOfferBytes incoming{};
    transport::Completion offer_sent, offer_received, mid_sent, mid_received, done_sent, done_received;
    DirectSource send;               // its buffers, as this process reads them
    DirectSource recv;               // (all-reduce only)
    std::byte* recv_here = nullptr;  // its output, where addressable here (all-reduce only)
  };

  Peer& peer(int rank) { return peers_[static_cast<size_t>(rank)]; }
  const Peer& peer(int rank) const { return peers_[static_cast<size_t>(rank)]; }
  DirectOfferBytes& outgoing() { return outgoing_; }
  std::vector<DirectOffer>& offers() { return offers_; }
  std::vector<DirectSource>& inputs() { return inputs_; }
  std::vector<std::byte*>& outputs() { return outputs_; }

 private:
  std::unique_ptr<Peer[]> peers_;
  DirectOfferBytes outgoing_{};
  std::vector<DirectOffer> offers_;
  std::vector<DirectSource> inputs_;
  std::vector<std::byte*> outputs_;
};

class DirectPhase final : public Phase {
 public:
  DirectPhase(const OpContext& op, const DirectArgs& args, DirectChannel& channel, DirectSlot& slot)
      : op_(op), args_(args), channel_(channel), slot_(slot) {}

  Result<Progress> advance() override;
  std::string waitingFor() const override;
  // Whether the operation runs direct: true from the moment every rank's offer is in and says so; false until
  // then, and after advance() has returned kDone, false means run the ring.
  bool ran() const { return ran_; }
  // After a fallback: whether it says nothing of the next operations, because some rank had not yet tried
  // reading its peers or this operation was not to read (DirectArgs::cma).
  bool transient() const { return transient_; }

 private:
  // kShare and kGather run their local work in slices, one per advance() (kYielded between them).
  enum class State { kPost, kOffers, kShare, kMid, kGather, kDone, kFinished };

  Status postOffers();
  Result<bool> offersArrived();
  Status resolveBuffers();
  void probeReads();
  // The next slice of `total` bytes of local work, run by `run`(from, to): true once the last is done.
  Result<bool> runSlice(size_t total, Status (DirectPhase::*run)(size_t, size_t));
  // This rank's share, [from, to) of its shareBytes(); an all-reduce that reads does its reduction here and its
  // gather in gatherBlocks().
  size_t shareBytes() const;
  Status runShare(size_t from, size_t to);
  size_t gatherBytes() const;
  Status gatherBlocks(size_t from, size_t to);
  Status postRound(transport::Completion DirectSlot::Peer::*sent, transport::Completion DirectSlot::Peer::*received);
  Result<bool> roundDone(transport::Completion DirectSlot::Peer::*sent,
                         transport::Completion DirectSlot::Peer::*received) const;
  BlockLayout allReduceBlocks() const;
  bool twoRounds() const { return ran_ && args_.kind == OpKind::kAllReduce && uses_reads_; }
  // The bytes of `rank`'s send and recv buffers that peers touch, as every rank offers them.
  size_t offeredSendBytes(int rank) const;
  size_t offeredRecvBytes() const;

  const OpContext& op_;
  const DirectArgs& args_;
  DirectChannel& channel_;
  DirectSlot& slot_;
  State state_ = State::kPost;
  bool ran_ = false;
  bool uses_reads_ = false;
  bool transient_ = false;
  size_t slice_done_ = 0;  // bytes of the running share or gather done
};

}  // namespace psdp::coll
