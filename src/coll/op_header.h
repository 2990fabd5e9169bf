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

enum class OpKind : uint32_t { kReduceScatter = 1, kAllGather, kAllReduce, kBroadcast, kBarrier };

const char* opKindName(OpKind kind);  // "all-reduce"

struct OpHeader {
  OpKind kind = OpKind::kBarrier;
  uint32_t seq = 0;
  uint64_t count = 0;               // 0 for the barrier
  psdp_dtype_t dtype = PSDP_UINT8;  // PSDP_UINT8 for the barrier
  psdp_op_t op = PSDP_NUM_OPS;      // reductions only, else PSDP_NUM_OPS; see withOp()
  int32_t root = -1;                // broadcast only

  bool hasData() const { return kind != OpKind::kBarrier; }
  bool isReduction() const;
  // Sets `op`; every premul-sum op is PSDP_NUM_OPS here, because its value is local to the process (each
  // rank passes its own scalar, and so its own op).
  OpHeader& withOp(psdp_op_t reduction);
  // "all-reduce #12 (count 1000, float32, sum)", "broadcast #3 (count 10, int8, root 2)", "barrier #4".
  std::string describe() const;

  bool operator==(const OpHeader&) const = default;
};

// The wire form: fixed size, host byte order (every rank of a job runs on the same architecture), with a
// magic word so that anything else that lands on the header channel is reported, not misread.
inline constexpr size_t kOpHeaderBytes = 32;
using OpHeaderBytes = std::array<std::byte, kOpHeaderBytes>;

OpHeaderBytes encodeOpHeader(const OpHeader& header);
// Errors: mismatch (wrong length or magic: not a psdp operation header of this version).
Result<OpHeader> decodeOpHeader(const std::byte* data, size_t bytes);

}  // namespace psdp::coll
