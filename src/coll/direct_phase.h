// Direct collectives: on one host, when every rank can address every other rank's buffers (ranks of one
// process, or buffers from psdp_mem_alloc: coll/direct_offer.h), each rank reduces or copies its share
// straight between the ranks' buffers (coll/direct_kernels.h), instead of passing fragments around a ring
// through staging. Memory then sees each input read once and each output written once. The phase:
//   1. sends its offer to every peer and receives theirs: one small message each way per pair;
//   2. if not every rank can reach every buffer it needs (directReachable: the same answer on every rank),
//      it ends with ran() false and the task runs the ring instead, whose messages follow the offers;
//   3. otherwise it maps the peers' segments (cached per communicator) and does this rank's share;
//   4. then tells every peer it is done and waits for every peer's word: no rank returns, and so hands its
//      buffers back to the caller, while another rank may still read or write them.
// A peer that dies after step 1 leaves its mapped pages valid here; step 4 reports it.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <vector>

#include "coll/direct_offer.h"
#include "coll/op_header.h"
#include "coll/progress_loop.h"
#include "coll/reduce_kernels.h"
#include "transport/peer_segment_map.h"

namespace psdp::coll {

struct DirectArgs {
  OpKind kind = OpKind::kAllReduce;
  const std::byte* send = nullptr;
  std::byte* recv = nullptr;
  size_t count = 0;  // reduce-scatter: recvcount; all-gather: sendcount; all-reduce, broadcast: count
  size_t elem_size = 1;
  ReduceKernel kernel;    // reductions; never premul-sum, whose scalars are each rank's own
  int root = -1;          // broadcast
  bool streaming = true;  // results may be stored with non-temporal stores (coll/direct_kernels.h)
};

// What direct operations keep between calls, allocated once per communicator: the offer messages and their
// completions, the peers' mapped segments, the resolved buffer addresses and the reduction tile.
class DirectChannel {
 public:
  explicit DirectChannel(int nranks);

  struct Peer {
    DirectOfferBytes incoming{};
    transport::Completion offer_sent, offer_received, done_sent, done_received;
    DirectOffer offer;
    const std::byte* send = nullptr;  // its buffers, as addressed from this process
    std::byte* recv = nullptr;
  };

  Peer& peer(int rank) { return peers_[static_cast<size_t>(rank)]; }
  const Peer& peer(int rank) const { return peers_[static_cast<size_t>(rank)]; }
  DirectOfferBytes& outgoing() { return outgoing_; }
  transport::PeerSegmentMap& segments() { return segments_; }
  std::vector<DirectOffer>& offers() { return offers_; }
  std::vector<const std::byte*>& inputs() { return inputs_; }
  std::vector<std::byte*>& outputs() { return outputs_; }
  std::byte* tile() const { return tile_.get(); }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };

  std::unique_ptr<Peer[]> peers_;
  DirectOfferBytes outgoing_{};
  transport::PeerSegmentMap segments_;
  std::vector<DirectOffer> offers_;
  std::vector<const std::byte*> inputs_;
  std::vector<std::byte*> outputs_;
  std::unique_ptr<std::byte, Free> tile_;
};

class DirectPhase final : public Phase {
 public:
  DirectPhase(const OpContext& op, const DirectArgs& args, DirectChannel& channel)
      : op_(op), args_(args), channel_(channel) {}

  Result<Progress> advance() override;
  std::string waitingFor() const override;
  // Whether the operation ran direct; meaningful once advance() has returned kDone. False: run the ring.
  bool ran() const { return ran_; }

 private:
  enum class State { kPost, kOffers, kDone, kFinished };

  Status postOffers();
  Result<bool> offersArrived();
  Status resolveBuffers();
  void runShare();
  Status postDone();
  Result<bool> settled(bool offers_only) const;
  // The bytes of `rank`'s send and recv buffers that peers touch, as every rank offers them.
  size_t offeredSendBytes(int rank) const;
  size_t offeredRecvBytes() const;

  const OpContext& op_;
  const DirectArgs& args_;
  DirectChannel& channel_;
  State state_ = State::kPost;
  bool ran_ = false;
};

}  // namespace psdp::coll
