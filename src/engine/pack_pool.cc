#include "engine/pack_pool.h"

#include "transport/peer_memory.h"

namespace psdp::engine {

PackPool::~PackPool() {
  release(reduce_);
  release(gather_);
}

void PackPool::release(std::vector<Buffer>& buffers) {
  for (Buffer& b : buffers) (void)transport::freeShareableMemory(b.data);
  buffers.clear();
}

Status PackPool::grow(std::vector<Buffer>& buffers, size_t count, size_t bytes) {
  size_t fitting = 0;
  for (const Buffer& b : buffers) fitting += b.bytes >= bytes ? 1 : 0;
  for (; fitting < count; ++fitting) {
    Result<void*> memory = transport::allocateShareableMemory(bytes == 0 ? 1 : bytes);
    if (!memory.isOk()) return memory.status().withContext(fmt::format("{} pack buffers of {} bytes", count, bytes));
    buffers.push_back(Buffer{static_cast<std::byte*>(memory.value()), bytes, false});
  }
  return Status::ok();
}

Status PackPool::reserve(size_t reduce, size_t reduce_bytes, size_t gather, size_t gather_bytes) {
  PSDP_RETURN_IF_ERROR(grow(reduce_, reduce, reduce_bytes));
  return grow(gather_, gather, gather_bytes);
}

std::byte* PackPool::take(std::vector<Buffer>& buffers, size_t bytes) {
  Buffer* best = nullptr;
  for (Buffer& b : buffers) {
    if (!b.taken && b.bytes >= bytes && (best == nullptr || b.bytes < best->bytes)) best = &b;
  }
  if (best == nullptr) return nullptr;
  best->taken = true;
  return best->data;
}

void PackPool::giveBack(std::byte* buffer) {
  for (std::vector<Buffer>* buffers : {&reduce_, &gather_}) {
    for (Buffer& b : *buffers) {
      if (b.data == buffer) b.taken = false;
    }
  }
}

}  // namespace psdp::engine
