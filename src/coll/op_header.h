// The header of every collective: what the rank called (kind, sequence number, count, dtype, op, root).
// Ranks that disagree, because one called another collective, another count, dtype, op or root, or
// skipped a call, find out from the headers (exchanged by coll/op_header_check.h before the call may
// complete) instead of from each other's data.
#pragma once

#include <psdp/psdp.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace psdp::coll {

enum class OpKind : uint32_t {
  kReduceScatter = 1,
  kAllGather,
  kAllReduce,
  kBroadcast,
  kBarrier,
  kReduce,
  kGather,
  kScatter,
  kAllToAll,
  kAllGatherV,
  kReduceScatterV,
  // Point-to-point: never exchanged as headers (two ranks take part, not the team); named in messages only.
  kSend,
  kRecv,
};

const char* opKindName(OpKind kind);  // "all-reduce"

struct OpHeader {
  OpKind kind = OpKind::kBarrier;
  uint32_t seq = 0;
  uint64_t count = 0;               // 0 for the barrier; the total of every rank's count for the -v kinds
  psdp_dtype_t dtype = PSDP_UINT8;  // PSDP_UINT8 for the barrier
  psdp_op_t op = PSDP_NUM_OPS;      // reductions only, else PSDP_NUM_OPS; see withOp()
  int32_t root = -1;                // rooted kinds (broadcast, reduce, gather, scatter); the peer of send and recv
  // The -v kinds: a digest of the per-rank counts (countsDigest), so that ranks passing different counts with
  // the same total disagree; 0 for the others.
  uint64_t counts_digest = 0;

  bool hasData() const { return kind != OpKind::kBarrier; }
  bool isReduction() const;
  bool isRooted() const;
  // Sets `op`; every premul-sum op is PSDP_NUM_OPS here, because its value is local to the process (each
  // rank passes its own scalar, and so its own op).
  OpHeader& withOp(psdp_op_t reduction);
  // "all-reduce #12 (count 1000, float32, sum)", "broadcast #3 (count 10, int8, root 2)", "barrier #4".
  std::string describe() const;

  bool operator==(const OpHeader&) const = default;
};

// The wire form: fixed size, host byte order (every rank of a job runs on the same architecture), with a
// magic word so that anything else that lands on the header channel is reported, not misread.
inline constexpr size_t kOpHeaderBytes = 40;
using OpHeaderBytes = std::array<std::byte, kOpHeaderBytes>;

OpHeaderBytes encodeOpHeader(const OpHeader& header);
// Errors: mismatch (wrong length or magic: not a psdp operation header of this version).
Result<OpHeader> decodeOpHeader(const std::byte* data, size_t bytes);

// FNV-1a over the counts, never 0: what OpHeader::counts_digest carries for the -v kinds.
uint64_t countsDigest(const size_t* counts, int n);

}  // namespace psdp::coll
