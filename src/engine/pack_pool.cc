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
  bool large_enough = buffers.size() >= count;
  for (const Buffer& b : buffers) large_enough = large_enough && b.bytes >= bytes;
  if (large_enough) return Status::ok();
  release(buffers);
  for (size_t i = 0; i < count; ++i) {
    Result<void*> memory = transport::allocateShareableMemory(bytes == 0 ? 1 : bytes);
    if (!memory.isOk()) {
      release(buffers);
      return memory.status().withContext(fmt::format("{} pack buffers of {} bytes", count, bytes));
    }
    buffers.push_back(Buffer{static_cast<std::byte*>(memory.value()), bytes, false});
  }
  return Status::ok();
}

Status PackPool::reserve(size_t reduce, size_t reduce_bytes, size_t gather, size_t gather_bytes) {
  PSDP_RETURN_IF_ERROR(grow(reduce_, reduce, reduce_bytes));
  return grow(gather_, gather, gather_bytes);
}

std::byte* PackPool::take(std::vector<Buffer>& buffers) {
  for (Buffer& b : buffers) {
    if (!b.taken) {
      b.taken = true;
      return b.data;
    }
  }
  return nullptr;
}

void PackPool::giveBack(std::byte* buffer) {
  for (std::vector<Buffer>* buffers : {&reduce_, &gather_}) {
    for (Buffer& b : *buffers) {
      if (b.data == buffer) b.taken = false;
    }
  }
}

size_t PackPool::bytes() const {
  size_t total = 0;
  for (const std::vector<Buffer>* buffers : {&reduce_, &gather_}) {
    for (const Buffer& b : *buffers) total += b.bytes;
  }
  return total;
}

}  // namespace psdp::engine
