// The framework's side of psdp-perf step (psdp runs no model math): backward's writing of a bucket of
// gradients, the optimizer on the owned pieces (Adam, Kingma and Ba, with bias correction, and plain SGD over
// float32) and the rounding of float32 master weights into bfloat16 parameters. Each is vectorised for the
// host (AVX-512, AVX2 or SSE2, chosen at load time), as a framework's kernels are: a scalar loop here would
// make the framework, not psdp, what a step is bound by.
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

// dst[i] = value, the stores backward makes for one bucket of gradients.
void fillFloat(float* dst, size_t n, float value);
void fillU16(uint16_t* dst, size_t n, uint16_t value);

}  // namespace psdp::perf
