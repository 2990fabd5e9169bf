#include "engine/dtype_convert.h"

#include <cstdint>
#include <cstring>

#include "base/dtype.h"
#include "coll/half.h"

namespace psdp::engine {
namespace {

// Plain loops over the branch-free scalar conversions, which GCC vectorises.
template <typename To, typename From, typename Fn>
void convertLoop(void* dst, const void* src, size_t n, Fn fn) {
  auto* out = static_cast<To*>(dst);
  const auto* in = static_cast<const From*>(src);
  for (size_t i = 0; i < n; ++i) out[i] = fn(in[i]);
}

}  // namespace

void convertElements(void* dst, psdp_dtype_t to, const void* src, psdp_dtype_t from, size_t n) {
  if (to == from) {
    std::memcpy(dst, src, n * dtypeSize(to));
    return;
  }
  if (to == PSDP_FLOAT32 && from == PSDP_BFLOAT16) return convertLoop<float, uint16_t>(dst, src, n, coll::bf16ToFloat);
  if (to == PSDP_FLOAT32 && from == PSDP_FLOAT16) return convertLoop<float, uint16_t>(dst, src, n, coll::fp16ToFloat);
  if (to == PSDP_BFLOAT16 && from == PSDP_FLOAT32) return convertLoop<uint16_t, float>(dst, src, n, coll::floatToBf16);
  convertLoop<uint16_t, float>(dst, src, n, coll::floatToFp16);  // float32 to float16
}

}  // namespace psdp::engine
