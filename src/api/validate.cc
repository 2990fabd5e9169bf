#include "api/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "coll/collectives.h"
#include "coll/provider.h"

namespace psdp::api {
namespace {

// Byte size of `count` elements, or an error when no buffer can be that large: C caps an object at
// PTRDIFF_MAX bytes, and beyond it `ptr + bytes` wraps, which would defeat the overlap check below (a
// count of SIZE_MAX int8 elements fits size_t, yet would be copied into a small buffer).
Status checkedBytes(const char* name, const char* what, size_t count, size_t elem, size_t* bytes) {
  constexpr auto kMaxBytes = static_cast<size_t>(std::numeric_limits<ptrdiff_t>::max());
  if (elem != 0 && count > kMaxBytes / elem) {
    return Status::invalidArgument(
        "{}: count too large: {} of {} {}-byte elements overflows the largest possible buffer (PTRDIFF_MAX bytes)",
        name, what, count, elem);
  }
  *bytes = count * elem;
  return Status::ok();
}

bool rangesOverlap(uintptr_t a, size_t a_bytes, uintptr_t b, size_t b_bytes) {
  return a_bytes > 0 && b_bytes > 0 && a < b + b_bytes && b < a + a_bytes;
}

Status checkTypes(const CollectiveArgs& a) {
  if (static_cast<unsigned>(a.dtype) >= PSDP_NUM_DTYPES) {
    return Status::invalidArgument("{}: unknown dtype {}", a.name, static_cast<int>(a.dtype));
  }
  // Values from PSDP_NUM_OPS up may be premul-sum ops: the communicator's table checks those when the
  // collective is posted (live, same communicator, same dtype), with invalid argument too.
  if (a.reduces && static_cast<int>(a.op) < 0) {
    return Status::invalidArgument("{}: unknown op {}", a.name, static_cast<int>(a.op));
  }
  if (a.reduces && static_cast<int>(a.op) < PSDP_NUM_OPS && !coll::isReductionSupported(a.dtype, a.op)) {
    return Status::internal("{}: no kernel for {} with {}", a.name, coll::opName(a.op), coll::dtypeName(a.dtype));
  }
  return Status::ok();
}

}  // namespace

Result<size_t> countTimesRanks(const char* name, size_t count, int nranks) {
  if (count > std::numeric_limits<size_t>::max() / static_cast<size_t>(nranks)) {
    return Status::invalidArgument("{}: count {} times {} ranks overflows", name, count, nranks);
  }
  return count * static_cast<size_t>(nranks);
}

Result<CountsTotal> sumCounts(const char* name, const char* what, const size_t* counts, int nranks, int rank) {
  if (counts == nullptr) return Status::invalidArgument("{}: {} is NULL", name, what);
  CountsTotal sum;
  for (int r = 0; r < nranks; ++r) {
    if (r == rank) sum.before_rank = sum.total;
    if (__builtin_add_overflow(sum.total, counts[r], &sum.total)) {
      return Status::invalidArgument("{}: {} overflow: their sum up to rank {} ({}) exceeds SIZE_MAX", name, what, r,
                                     counts[r]);
    }
  }
  return sum;
}

Status checkRank(const char* call, const char* what, int value, int nranks) {
  if (value < 0 || value >= nranks) {
    return Status::invalidArgument("{}: {} {} is outside [0, {})", call, what, value, nranks);
  }
  return Status::ok();
}

Status checkOut(const void* out, const char* name) {
  if (out == nullptr) return Status::invalidArgument("{} is NULL", name);
  return Status::ok();
}

Status checkTextOut(const char* buf, const size_t* len) {
  if (len == nullptr) return Status::invalidArgument("len is NULL");
  if (buf == nullptr && *len != 0) return Status::invalidArgument("buf is NULL but *len is {}", *len);
  return Status::ok();
}

void copyTextOut(const std::string& text, char* buf, size_t* len) {
  if (*len > 0) {
    const size_t copied = std::min(*len - 1, text.size());
    std::memcpy(buf, text.data(), copied);
    buf[copied] = '\0';
  }
  *len = text.size() + 1;
}

psdp_memory_kind_t callMemoryKind(const CollectiveArgs& a) {
  return a.stream != nullptr ? PSDP_MEMORY_CUDA : PSDP_MEMORY_HOST;
}

Status validateCollective(const CollectiveArgs& a) {
  if (a.stream != nullptr) {
    // Host calls take no stream; a call with one is refused here unless some provider serves CUDA memory.
    Result<const coll::CollectiveProvider*> provider = coll::findCollectiveProvider(PSDP_MEMORY_CUDA, "");
    if (!provider.isOk()) {
      return provider.status().withContext(
          fmt::format("{}: a stream was given, so the buffers are CUDA memory", a.name));
    }
  }
  PSDP_RETURN_IF_ERROR(checkTypes(a));
  size_t elem = coll::dtypeSize(a.dtype);
  size_t send_bytes = 0, recv_bytes = 0;
  PSDP_RETURN_IF_ERROR(checkedBytes(a.name, "sendbuf", a.send_count, elem, &send_bytes));
  PSDP_RETURN_IF_ERROR(checkedBytes(a.name, "recvbuf", a.recv_count, elem, &recv_bytes));
  if (send_bytes > 0 && a.sendbuf == nullptr) return Status::invalidArgument("{}: sendbuf is NULL", a.name);
  if (recv_bytes > 0 && a.recvbuf == nullptr) return Status::invalidArgument("{}: recvbuf is NULL", a.name);
  auto send = reinterpret_cast<uintptr_t>(a.sendbuf);
  auto recv = reinterpret_cast<uintptr_t>(a.recvbuf);
  // Each pointer is named on its own: the caller must know which of the two to fix.
  for (auto [what, ptr] : {std::pair{"sendbuf", send}, std::pair{"recvbuf", recv}}) {
    if (ptr % elem != 0) {
      return Status::invalidArgument("{}: {} {:#x} is not aligned to the {}-byte {} element", a.name, what, ptr, elem,
                                     coll::dtypeName(a.dtype));
    }
  }
  uintptr_t inplace = a.send_inside_recv ? recv + a.inplace_offset * elem : send + a.inplace_offset * elem;
  bool is_inplace = a.send_inside_recv ? send == inplace : recv == inplace;
  if (!is_inplace && rangesOverlap(send, send_bytes, recv, recv_bytes)) {
    const char* rule = a.inplace_rule != nullptr ? a.inplace_rule
                       : a.send_inside_recv      ? "sendbuf == recvbuf + rank * count"
                                                 : "recvbuf == sendbuf + rank * count";
    return Status::invalidArgument("{}: sendbuf and recvbuf overlap but are not in place (in place means {})", a.name,
                                   rule);
  }
  return Status::ok();
}

}  // namespace psdp::api
