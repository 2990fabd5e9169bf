// Element conversions between the floating dtypes of mixed precision (float32, bfloat16, float16), for the
// step's packing: 16-bit gradients widened into float32 pack buffers, reduced pieces widened into the
// float32 gradient shard or rounded back into 16-bit gradient buffers. Rounding is to nearest even, with
// coll/half.h's rules for NaN, infinity and subnormals, so a value survives any widen/narrow round trip.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>

namespace psdp::engine {

// dst[i] = src[i] converted from `from` to `to`, for i < n; a memcpy when the dtypes are alike. dst and src
// do not overlap. REQUIRES: the dtypes are alike, or one is float32 and the other bfloat16 or float16.
void convertElements(void* dst, psdp_dtype_t to, const void* src, psdp_dtype_t from, size_t n);

}  // namespace psdp::engine
