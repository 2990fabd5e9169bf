#include "framework_kernels.h"

#include <bit>
#include <cmath>

#include "target_clones.h"

// Each loop is vectorised per target (target_clones.h); sqrt without errno (-fno-math-errno is set for this
// file) lets Adam's be.

namespace psdp::perf {

PSDP_PERF_TARGET_CLONES void adamUpdate(float* __restrict p, const float* __restrict g, float* __restrict m,
                                        float* __restrict v, size_t n, const AdamParams& a) {
  const float b1 = a.beta1, b2 = a.beta2, eps = a.eps;
  const float c1 = 1.0f - b1, c2 = 1.0f - b2;
  const float step_size = a.lr / (1.0f - std::pow(b1, static_cast<float>(a.step)));
  const float v_scale = 1.0f / std::sqrt(1.0f - std::pow(b2, static_cast<float>(a.step)));
  for (size_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = b1 * m[i] + c1 * gi;
    const float vi = b2 * v[i] + c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= step_size * mi / (std::sqrt(vi) * v_scale + eps);
  }
}

PSDP_PERF_TARGET_CLONES void sgdUpdate(float* __restrict p, const float* __restrict g, size_t n, float lr) {
  for (size_t i = 0; i < n; ++i) p[i] -= lr * g[i];
}

PSDP_PERF_TARGET_CLONES void roundToBf16(uint16_t* __restrict dst, const float* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(src[i]);
    dst[i] = static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  }
}

PSDP_PERF_TARGET_CLONES void fillFloat(float* __restrict dst, size_t n, float value) {
  for (size_t i = 0; i < n; ++i) dst[i] = value;
}

PSDP_PERF_TARGET_CLONES void fillU16(uint16_t* __restrict dst, size_t n, uint16_t value) {
  for (size_t i = 0; i < n; ++i) dst[i] = value;
}

}  // namespace psdp::perf
