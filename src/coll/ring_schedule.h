// The schedule of a ring pass: how a buffer splits into one block per rank, and in which order a rank
// sends (or receives) the fragments of those blocks. Pure arithmetic, shared by every ring algorithm, so
// that the two ends of a link, which never talk about it, post matching messages in the same order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace psdp::coll {

// `count` elements as `nblocks` contiguous blocks, in one of two forms.
//
// Even (the constructor): blocks that start on multiples of `granule` elements and differ in size by at most
// `granule` elements: the count is dealt out in whole granules, the first (count / granule) % nblocks blocks
// holding one granule more, and the last block also takes the count % granule elements left. With granule 1 the
// blocks differ by at most one element.
//
// Given (fromOffsets): block b is [offsets[b], offsets[b+1]), for the collectives with per-rank counts and for
// the reduce, whose only non-empty block is the root's. The layout points at the offsets, which the caller keeps
// alive (and unchanged) as long as the layout or a copy of it is used.
class BlockLayout {
 public:
  // REQUIRES: nblocks >= 1, granule >= 1.
  BlockLayout(size_t count, int nblocks, size_t granule = 1)
      : count_(count),
        nblocks_(nblocks),
        granule_(granule),
        base_(count / granule / static_cast<size_t>(nblocks)),
        extra_(count / granule % static_cast<size_t>(nblocks)),
        max_size_(std::max(size(0), size(nblocks - 1))) {}

  // REQUIRES: nblocks >= 1; offsets holds nblocks + 1 non-decreasing entries, offsets[0] == 0.
  static BlockLayout fromOffsets(const size_t* offsets, int nblocks) {
    BlockLayout layout(offsets[nblocks], nblocks);
    layout.offsets_ = offsets;
    layout.max_size_ = 0;
    for (int b = 0; b < nblocks; ++b) layout.max_size_ = std::max(layout.max_size_, layout.size(b));
    return layout;
  }

  size_t count() const { return count_; }
  int blocks() const { return nblocks_; }
  // REQUIRES: 0 <= block < blocks().
  size_t offset(int block) const {
    if (offsets_ != nullptr) return offsets_[block];
    return granule_ * (index(block) * base_ + std::min(index(block), extra_));
  }
  size_t size(int block) const { return (block + 1 == nblocks_ ? count_ : offset(block + 1)) - offset(block); }
  size_t maxSize() const { return max_size_; }

 private:
  static size_t index(int block) { return static_cast<size_t>(block); }

  size_t count_;
  int nblocks_;
  size_t granule_;
  size_t base_;
  size_t extra_;
  const size_t* offsets_ = nullptr;  // the given form's, else null; before max_size_, which reads it
  size_t max_size_ = 0;
};

struct RingShape {
  int rank = 0;
  int nranks = 1;
  size_t frag_elems = 1;    // elements per fragment (the last fragment of a block may hold fewer)
  int frags_per_round = 1;  // G: fragments of one block per step of a round
};

// Walks the fragments one rank sends, or receives, during a pass of nranks-1 steps. Order, as in NCCL's
// ring loop: round-major, then step, then fragment. Round g covers elements [g*G*F, (g+1)*G*F) of every
// block (F = frag_elems); at step s the cursor is on block (rank - s - shift) mod nranks, in up to G
// fragments of F elements. Positions past the end of a smaller block are skipped, identically at both
// ends. Rank r's cursor with shift k and rank r+1's with shift k+1 visit the same blocks and fragments:
// that is how a sender and its receiver agree.
//
// Round-major order is what lets a reduce-scatter run with a few staging slots: the fragment a rank
// forwards at step s+1 is the one it received at step s of the same round, G positions earlier in the
// stream, so no rank ever has to hold a whole block of partial sums (block-major order would need that).
class RingCursor {
 public:
  RingCursor(const BlockLayout& layout, const RingShape& shape, int shift);

  bool done() const { return round_ >= rounds_; }
  // Fragments visited before this one (skipped positions not counted): the stream index.
  uint64_t index() const { return index_; }
  // (round, step, fragment) linearised, skipped positions included. The fragment forwarded at step s+1 of
  // a round is at the position of the one received at step s, plus frags_per_round.
  uint64_t position() const;
  int step() const { return step_; }
  bool lastStep() const { return step_ == steps_ - 1; }
  int block() const { return block_; }
  // Elements from the start of the block, and from the start of the whole buffer.
  size_t blockOffset() const { return fragStart(); }
  size_t bufferOffset() const { return layout_.offset(block_) + fragStart(); }
  size_t count() const { return std::min(shape_.frag_elems, block_size_ - fragStart()); }

  // REQUIRES: !done().
  void advance();

 private:
  size_t fragStart() const { return round_ * round_elems_ + static_cast<size_t>(frag_) * shape_.frag_elems; }
  void enterStep();
  void nextStep();
  void skipEmpty();

  BlockLayout layout_;
  RingShape shape_;
  int shift_;
  int steps_;
  size_t round_elems_;
  size_t rounds_;
  size_t round_ = 0;
  int step_ = 0;
  int frag_ = 0;
  int block_ = 0;
  size_t block_size_ = 0;
  uint64_t index_ = 0;
};

}  // namespace psdp::coll
