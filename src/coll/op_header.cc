#include "coll/op_header.h"

#include <fmt/format.h>

#include <cstring>

#include "coll/collectives.h"

namespace psdp::coll {
namespace {

// "PSH" and the version of the layout below.
constexpr uint32_t kMagic = 0x50534801;

// The wire layout: magic, seq, count, kind, dtype, op, root; 32 bytes, no padding.
struct Wire {
  uint32_t magic;
  uint32_t seq;
  uint64_t count;
  uint32_t kind;
  int32_t dtype;
  int32_t op;
  int32_t root;
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
  }
  return "unknown collective";
}

bool OpHeader::isReduction() const {
  return kind == OpKind::kReduceScatter || kind == OpKind::kAllReduce;
}

OpHeader& OpHeader::withOp(psdp_op_t reduction) {
  op = reduction >= PSDP_NUM_OPS ? PSDP_NUM_OPS : reduction;
  return *this;
}

std::string OpHeader::describe() const {
  if (!hasData()) return fmt::format("{} #{}", opKindName(kind), seq);
  std::string text = fmt::format("{} #{} (count {}, {}", opKindName(kind), seq, count, dtypeName(dtype));
  if (isReduction()) text += fmt::format(", {}", op == PSDP_NUM_OPS ? "premul-sum" : opName(op));
  if (kind == OpKind::kBroadcast) text += fmt::format(", root {}", root);
  return text + ")";
}

OpHeaderBytes encodeOpHeader(const OpHeader& header) {
  Wire wire{kMagic,
            header.seq,
            header.count,
            static_cast<uint32_t>(header.kind),
            static_cast<int32_t>(header.dtype),
            static_cast<int32_t>(header.op),
            header.root};
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
  return header;
}

}  // namespace psdp::coll
