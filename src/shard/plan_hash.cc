#include "shard/plan_hash.h"

#include <string_view>

namespace psdp::shard {
namespace {

class Fnv1a {
 public:
  void add(uint64_t v) {
    // Byte by byte, low first, so that the digest does not depend on the host's byte order.
    for (int i = 0; i < 8; ++i) addByte(static_cast<uint8_t>(v >> (8 * i)));
  }
  void add(std::string_view s) {
    add(uint64_t{s.size()});  // the length first: ("ab", "c") and ("a", "bc") differ
    for (char c : s) addByte(static_cast<uint8_t>(c));
  }
  // FNV-1a's last bytes only reach the low bits weakly; murmur3's finalizer spreads them.
  uint64_t digest() const {
    uint64_t h = h_;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
  }

 private:
  void addByte(uint8_t b) {
    h_ ^= b;
    h_ *= 0x100000001b3ull;
  }
  uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace

uint64_t planHash(std::span<const BufferDesc> buffers, const PlanConfig& config, const RankLayout& layout) {
  Fnv1a h;
  h.add("psdp-plan-1");
  h.add(static_cast<uint64_t>(config.world_size));
  h.add(static_cast<uint64_t>(config.group_size));
  h.add(static_cast<uint64_t>(config.level));
  h.add(config.chunk_bytes);
  h.add(config.align_bytes);
  h.add(config.pad_bytes);
  for (int r : layout.ranks()) h.add(static_cast<uint64_t>(r));
  for (const BufferDesc& b : buffers) {
    if (isShardSized(b.role)) continue;
    h.add(static_cast<uint64_t>(b.role));
    h.add(b.name);
    h.add(b.count);
    h.add(static_cast<uint64_t>(b.dtype));
    h.add(static_cast<uint64_t>(b.memory));
  }
  return h.digest();
}

uint64_t registrationDigest(const BufferDesc& buffer) {
  Fnv1a h;
  h.add("psdp-registration-1");
  h.add(static_cast<uint64_t>(buffer.role));
  h.add(buffer.name);
  h.add(isShardSized(buffer.role) ? 0 : buffer.count);
  h.add(static_cast<uint64_t>(buffer.dtype));
  h.add(static_cast<uint64_t>(buffer.memory));
  return h.digest();
}

uint64_t configDigest(const PlanConfig& config) {
  Fnv1a h;
  h.add("psdp-plan-config-1");
  h.add(static_cast<uint64_t>(config.group_size));
  h.add(static_cast<uint64_t>(config.level));
  h.add(config.chunk_bytes);
  h.add(config.align_bytes);
  h.add(config.pad_bytes);
  return h.digest();
}

uint64_t digestOf(std::span<const uint64_t> digests) {
  Fnv1a h;
  h.add(uint64_t{digests.size()});
  for (uint64_t d : digests) h.add(d);
  return h.digest();
}

}  // namespace psdp::shard
