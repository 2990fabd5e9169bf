// The optimizer psdp-perf step runs on the owned pieces, as the framework would (psdp runs no model math):
// Adam (Kingma and Ba, with bias correction) and plain SGD over float32, and the rounding of float32 master
// weights into bfloat16 parameters, vectorised for the host (AVX-512, AVX2 or SSE2, chosen at load time).
#pragma once

#include <cstddef>
#include <cstdint>

namespace psdp::perf {

struct AdamParams {
  float lr = 1e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  int step = 1;  // from 1: the bias correction's t
};

// p -= lr * mhat / (sqrt(vhat) + eps), after m = b1 m + (1 - b1) g and v = b2 v + (1 - b2) g^2.
// Reads g, p, m, v and writes p, m, v: 7 passes of n floats over memory.
void adamUpdate(float* p, const float* g, float* m, float* v, size_t n, const AdamParams& a);

// p -= lr * g: reads g, p and writes p.
void sgdUpdate(float* p, const float* g, size_t n, float lr);

// Mixed precision's last pass: dst[i] = src[i] rounded to bfloat16 (to nearest, ties to even; the master
// weights here are finite), the framework writing its updated master weights into its parameters.
void roundToBf16(uint16_t* dst, const float* src, size_t n);

}  // namespace psdp::perf
