// Bookkeeping for posted sends and recvs. Each operation has a PendingOp from a pool preallocated per
// transport and passed to UCX as the callback's user_data, filled in before the UCX call: UCX may run the
// callback inside that call (psdp asks it to for recvs, see ucx_transport.cc). The per-peer list lets a peer
// failure find every operation still waiting on that peer.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "transport/transport.h"

namespace psdp::transport::ucx {

struct PendingOp {
  PendingOp* prev = nullptr;
  PendingOp* next = nullptr;
  void* owner = nullptr;             // the transport, for UCX's static callbacks
  void* request = nullptr;           // UCX's request, once the post call returned one
  Completion* completion = nullptr;  // null once detached
  Tag tag = 0;
  size_t bytes = 0;
  int peer = -1;
  bool is_recv = false;
  bool finished = false;  // the completion has been written
  // A peer notice (ucx_transport.cc): accepted at any length up to `bytes`, and not counted as outstanding
  // work, so that the notice receives always posted do not keep the progress thread spinning.
  bool is_notice = false;
  bool detached = false;  // completed by psdp ahead of UCX (transport failure, close); UCX may still call back
};

// Intrusive, circular, doubly linked list with a sentinel: O(1) insert and unlink, no allocation.
// Not thread-safe: the worker lock guards it.
class PendingList {
 public:
  PendingList() { head_.prev = head_.next = &head_; }
  PendingList(const PendingList&) = delete;
  PendingList& operator=(const PendingList&) = delete;

  bool empty() const { return head_.next == &head_; }

  void pushBack(PendingOp* op) {
    op->prev = head_.prev;
    op->next = &head_;
    head_.prev->next = op;
    head_.prev = op;
  }

  // Safe to call twice: an unlinked op points at itself.
  static void unlink(PendingOp* op) {
    op->prev->next = op->next;
    op->next->prev = op->prev;
    op->prev = op->next = op;
  }

  // Calls fn(op) for every op; fn may unlink (or complete) the op it is given.
  template <typename Fn>
  void forEach(Fn&& fn) {
    for (PendingOp* op = head_.next; op != &head_;) {
      PendingOp* next = op->next;
      fn(op);
      op = next;
    }
  }

 private:
  PendingOp head_;
};

// Free list of PendingOps in slabs. It grows by a slab only when more operations are in flight than ever
// before, so steady-state posting allocates nothing. Not thread-safe: the worker lock guards it.
class OpPool {
 public:
  explicit OpPool(size_t slab_size) : slab_size_(slab_size) { grow(); }
  OpPool(const OpPool&) = delete;
  OpPool& operator=(const OpPool&) = delete;

  // A default-initialised op.
  PendingOp* acquire() {
    if (free_ == nullptr) grow();
    PendingOp* op = free_;
    free_ = op->next;
    *op = PendingOp{};
    return op;
  }

  void release(PendingOp* op) {
    op->next = free_;
    free_ = op;
  }

 private:
  void grow() {
    slabs_.push_back(std::make_unique<PendingOp[]>(slab_size_));
    for (size_t i = 0; i < slab_size_; ++i) release(&slabs_.back()[i]);
  }

  size_t slab_size_;
  std::vector<std::unique_ptr<PendingOp[]>> slabs_;
  PendingOp* free_ = nullptr;
};

}  // namespace psdp::transport::ucx
