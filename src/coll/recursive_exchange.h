// The step every recursive halving/doubling algorithm is made of: with a partner, at most one receive and
// one send, posted together and waited for together. One completion of each direction suffices, so the
// algorithms use the first of op.recvs and op.sends and never allocate.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"
#include "coll/op_context.h"
#include "coll/progress_loop.h"

namespace psdp::coll {

// Partners of a power-of-two group folded out of n ranks (MPICH's recursive doubling): the first 2*r ranks,
// r = n - p with p the largest power of two <= n, pair up (even, odd); the even ones hand their data to the
// odd ones and sit out, and the p ranks left are renumbered 0..p-1.
struct RecursiveGroup {
  explicit RecursiveGroup(int rank, int nranks);

  int p = 1;       // power-of-two ranks that take part in the doubling steps
  int extra = 0;   // r: ranks folded into a partner
  int vrank = -1;  // this rank's number among the p, -1 for a rank that sits out
  int steps = 0;   // log2(p)
  bool sitsOut() const { return vrank < 0; }
  // The real rank of group member v.
  int realRank(int v) const { return v < extra ? 2 * v + 1 : v + extra; }
};

class PairExchange {
 public:
  explicit PairExchange(const OpContext& op) : op_(op) {}

  // Posts a receive of recv_bytes into `recv` from recv_peer and a send of send_bytes from `send` to
  // send_peer; a negative peer means none. REQUIRES: the previous exchange is complete.
  Status post(int send_peer, const std::byte* send, size_t send_bytes, int recv_peer, std::byte* recv,
              size_t recv_bytes);
  // Whether both posted transfers have completed; the first failed one as an error.
  Result<bool> complete() const;
  // "peer 3 (receive) and peer 2 (send) in recursive-doubling step 1", for timeout messages.
  std::string waitingFor(const char* algorithm, int step) const;

 private:
  const OpContext& op_;
  int send_peer_ = -1;
  int recv_peer_ = -1;
};

// A recursive algorithm as a Phase: steps_ exchanges run one after the other; post() posts step_'s through
// exchange_, and finish() consumes it once both of its transfers have completed.
class ExchangeSteps : public Phase {
 public:
  Result<Progress> advance() final;
  std::string waitingFor() const final { return exchange_.waitingFor(name_, step_); }

 protected:
  // `name`: the algorithm, for timeout messages ("recursive-doubling all-gather").
  ExchangeSteps(const OpContext& op, const char* name) : op_(op), exchange_(op), name_(name) {}
  virtual Status post() = 0;
  virtual void finish() {}

  const OpContext& op_;
  PairExchange exchange_;
  int steps_ = 0;
  int step_ = 0;

 private:
  const char* name_;
  bool posted_ = false;
};

}  // namespace psdp::coll
