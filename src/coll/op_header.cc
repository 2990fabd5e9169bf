#include "coll/op_header.h"

#include <fmt/format.h>

#include <cstring>

#include "coll/collectives.h"

namespace psdp::coll {
namespace {

// "PSH" and the version of the layout below.
constexpr uint32_t kMagic = 0x50534802;

// The wire layout: magic, seq, count, kind, dtype, op, root, counts digest; 40 bytes, no padding.
struct Wire {
  uint32_t magic;
  uint32_t seq;
  uint64_t count;
  uint32_t kind;
  int32_t dtype;
  int32_t op;
  int32_t root;
  uint64_t counts_digest;
};
static_assert(sizeof(Wire) == kOpHeaderBytes, "the header layout has no padding");

}  // namespace

const char* opKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kReduceScatter: return "reduce-scatter";
    case OpKind::kAllGather: return "all-gather";
    case OpKind::kAllReduce: return "all-reduce";
    case OpKind::kBroadcast: return "broadcast";
    case OpKind::kBarrier: return "barrier";
    case OpKind::kReduce: return "reduce";
    case OpKind::kGather: return "gather";
    case OpKind::kScatter: return "scatter";
    case OpKind::kAllToAll: return "all-to-all";
    case OpKind::kAllGatherV: return "all-gather-v";
    case OpKind::kReduceScatterV: return "reduce-scatter-v";
    case OpKind::kSend: return "send";
    case OpKind::kRecv: return "recv";
  }
  return "unknown collective";
}

bool OpHeader::isReduction() const {
  return kind == OpKind::kReduceScatter || kind == OpKind::kAllReduce || kind == OpKind::kReduce ||
         kind == OpKind::kReduceScatterV;
}

bool OpHeader::isRooted() const {
  return kind == OpKind::kBroadcast || kind == OpKind::kReduce || kind == OpKind::kGather || kind == OpKind::kScatter;
}

OpHeader& OpHeader::withOp(psdp_op_t reduction) {
  op = reduction >= PSDP_NUM_OPS ? PSDP_NUM_OPS : reduction;
  return *this;
}

std::string OpHeader::describe() const {
  if (!hasData()) return fmt::format("{} #{}", opKindName(kind), seq);
  const bool per_rank = counts_digest != 0;
  std::string text = fmt::format("{} #{} ({} {}, {}", opKindName(kind), seq, per_rank ? "total count" : "count", count,
                                 dtypeName(dtype));
  if (isReduction()) text += fmt::format(", {}", op == PSDP_NUM_OPS ? "premul-sum" : opName(op));
  if (isRooted()) text += fmt::format(", root {}", root);
  if (kind == OpKind::kSend) text += fmt::format(", to peer {}", root);
  if (kind == OpKind::kRecv) text += fmt::format(", from peer {}", root);
  if (per_rank) text += fmt::format(", per-rank counts {:016x}", counts_digest);
  return text + ")";
}

OpHeaderBytes encodeOpHeader(const OpHeader& header) {
  Wire wire{kMagic,
            header.seq,
            header.count,
            static_cast<uint32_t>(header.kind),
            static_cast<int32_t>(header.dtype),
            static_cast<int32_t>(header.op),
            header.root,
            header.counts_digest};
  OpHeaderBytes bytes;
  std::memcpy(bytes.data(), &wire, sizeof(wire));
  return bytes;
}

Result<OpHeader> decodeOpHeader(const std::byte* data, size_t bytes) {
  Wire wire;
  if (bytes != sizeof(wire))
    return Status::mismatch("an operation header of {} bytes, expected {}", bytes, sizeof(wire));
  std::memcpy(&wire, data, sizeof(wire));
  if (wire.magic != kMagic) {
    return Status::mismatch("an operation header with magic {:#x}, expected {:#x} (another psdp version?)", wire.magic,
                            kMagic);
  }
  OpHeader header;
  header.kind = static_cast<OpKind>(wire.kind);
  header.seq = wire.seq;
  header.count = wire.count;
  header.dtype = static_cast<psdp_dtype_t>(wire.dtype);
  header.op = static_cast<psdp_op_t>(wire.op);
  header.root = wire.root;
  header.counts_digest = wire.counts_digest;
  return header;
}

uint64_t countsDigest(const size_t* counts, int n) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (int i = 0; i < n; ++i) {
    uint64_t value = counts[i];
    for (int b = 0; b < 8; ++b) {
      hash ^= (value >> (8 * b)) & 0xff;
      hash *= 0x100000001b3ull;
    }
  }
  return hash == 0 ? 1 : hash;
}

}  // namespace psdp::coll
