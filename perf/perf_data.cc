#include "perf_data.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace psdp::perf {

unsigned short floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return static_cast<unsigned short>(sign | 0x7e00u);   // NaN
  if (mag >= 0x477ff000u) return static_cast<unsigned short>(sign | 0x7c00u);  // rounds to infinity
  if (mag < 0x38800000u) {
    // Subnormal half: shift the implicit-one mantissa into place, round to nearest even.
    if (mag < 0x33000000u) return static_cast<unsigned short>(sign);
    uint32_t exp = mag >> 23;
    uint32_t mant = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<unsigned short>(sign | half);
  }
  uint32_t h = ((mag - 0x38000000u) >> 13);
  uint32_t rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return static_cast<unsigned short>(sign | h);
}

float halfToFloat(unsigned short h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  } else {
    x = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

unsigned short floatToBfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);  // keep NaN a NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<unsigned short>(x >> 16);
}

float bfloat16ToFloat(unsigned short b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

namespace {

struct Half {
  unsigned short bits;
};
struct Bf16 {
  unsigned short bits;
};

// Conversion of an exact small value to T. Integers go through int64 so that a result out of T's range wraps
// the way the library's arithmetic in T wraps (well defined since C++20).
template <typename T>
T fromDouble(double v) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half{floatToHalf(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, Bf16>) {
    return Bf16{floatToBfloat16(static_cast<float>(v))};
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    return static_cast<T>(static_cast<int64_t>(v));
  }
}

template <typename T>
double toDouble(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return halfToFloat(v.bits);
  } else if constexpr (std::is_same_v<T, Bf16>) {
    return bfloat16ToFloat(v.bits);
  } else {
    return static_cast<double>(v);
  }
}

template <typename F>
void dispatch(psdp_dtype_t dtype, F&& f) {
  switch (dtype) {
    case PSDP_INT8: f(int8_t{}); break;
    case PSDP_UINT8: f(uint8_t{}); break;
    case PSDP_INT32: f(int32_t{}); break;
    case PSDP_UINT32: f(uint32_t{}); break;
    case PSDP_INT64: f(int64_t{}); break;
    case PSDP_UINT64: f(uint64_t{}); break;
    case PSDP_FLOAT16: f(Half{}); break;
    case PSDP_BFLOAT16: f(Bf16{}); break;
    case PSDP_FLOAT32: f(float{}); break;
    case PSDP_FLOAT64: f(double{}); break;
    default: break;
  }
}

bool isUnsigned(psdp_dtype_t d) {
  return d == PSDP_UINT8 || d == PSDP_UINT32 || d == PSDP_UINT64;
}

// Rank r's input at index i. Ranges keep every result exact: sums of 0..4 stay within int8 and bfloat16 up to
// 15 ranks, products are powers of two, min/max are -5..5 (0..10 unsigned) so that signedness is exercised.
double inputValue(Collective c, Reduction op, psdp_dtype_t dtype, int r, size_t i) {
  if (!reduces(c)) return static_cast<double>((i * 3 + static_cast<size_t>(r) * 7) % 101);
  switch (op) {
    case Reduction::kSum:
    case Reduction::kPremulSum: return static_cast<double>((i + 2 * static_cast<size_t>(r)) % 5);
    case Reduction::kProd: return (i + static_cast<size_t>(r)) % 4 == 0 ? 2.0 : 1.0;
    case Reduction::kMin:
    case Reduction::kMax: {
      double v = static_cast<double>((i * 7 + static_cast<size_t>(r) * 3) % 11);
      return isUnsigned(dtype) ? v : v - 5;
    }
    case Reduction::kAvg:
      // Every rank holds the same value, so the mean is exact whatever the rank count.
      return static_cast<double>(i % 13 + 1);
  }
  return 0;
}

double expectedValue(Collective c, Reduction op, psdp_dtype_t dtype, int nranks, int rank, int root, size_t per_rank,
                     size_t i) {
  switch (c) {
    case Collective::kBroadcast:
    case Collective::kScatter: return inputValue(c, op, dtype, root, i);
    case Collective::kAllGather:
    case Collective::kGather: return inputValue(c, op, dtype, static_cast<int>(i / per_rank), i);
    case Collective::kAllToAll: {
      const int source = static_cast<int>(i / per_rank);
      return inputValue(c, op, dtype, source, static_cast<size_t>(rank) * per_rank + i % per_rank);
    }
    case Collective::kSendRecv: return inputValue(c, op, dtype, (rank + nranks - 1) % nranks, i);
    default: break;
  }
  double acc = inputValue(c, op, dtype, 0, i);
  for (int r = 1; r < nranks; ++r) {
    double v = inputValue(c, op, dtype, r, i);
    switch (op) {
      case Reduction::kSum:
      case Reduction::kPremulSum:
      case Reduction::kAvg: acc += v; break;
      case Reduction::kProd: acc *= v; break;
      case Reduction::kMin: acc = v < acc ? v : acc; break;
      case Reduction::kMax: acc = v > acc ? v : acc; break;
    }
  }
  if (op == Reduction::kPremulSum) acc *= 2;  // premulScalar
  if (op == Reduction::kAvg) acc /= nranks;
  return acc;
}

}  // namespace

void premulScalar(psdp_dtype_t dtype, void* out) {
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    T v = fromDouble<T>(2.0);
    std::memcpy(out, &v, sizeof(T));
  });
}

void fillInput(Collective c, Reduction op, psdp_dtype_t dtype, int rank, int root, size_t first, size_t count,
               void* buf) {
  (void)root;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(buf);
    for (size_t k = 0; k < count; ++k) p[k] = fromDouble<T>(inputValue(c, op, dtype, rank, first + k));
  });
}

void fillGarbage(psdp_dtype_t dtype, size_t count, void* buf) {
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    T garbage;
    if constexpr (std::is_same_v<T, Half>) {
      garbage = Half{0x7e00};
    } else if constexpr (std::is_same_v<T, Bf16>) {
      garbage = Bf16{0x7fc0};
    } else if constexpr (std::is_floating_point_v<T>) {
      garbage = std::numeric_limits<T>::quiet_NaN();
    } else {
      garbage = std::numeric_limits<T>::max();
    }
    T* p = static_cast<T*>(buf);
    std::fill(p, p + count, garbage);
  });
}

long long countWrong(Collective c, Reduction op, psdp_dtype_t dtype, int nranks, int rank, int root,
                     size_t per_rank_count, size_t first, size_t count, const void* buf) {
  long long wrong = 0;
  // The one inexact case: a floating-point average over a rank count that is not a power of two may be computed
  // as a premul-sum by 1/n, which rounds. It is allowed n roundings of the dtype; everything else is exact.
  double rel_tol = 0;
  bool floating = dtype == PSDP_FLOAT16 || dtype == PSDP_BFLOAT16 || dtype == PSDP_FLOAT32 || dtype == PSDP_FLOAT64;
  if (op == Reduction::kAvg && reduces(c) && floating && (nranks & (nranks - 1)) != 0) {
    int mantissa = dtype == PSDP_FLOAT16 ? 11 : dtype == PSDP_BFLOAT16 ? 8 : dtype == PSDP_FLOAT32 ? 24 : 53;
    rel_tol = nranks * std::ldexp(1.0, -mantissa);
  }
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(buf);
    for (size_t k = 0; k < count; ++k) {
      // Round the exact value into T and back, so that integer wrap-around is expected as the library does it.
      double want = toDouble(fromDouble<T>(expectedValue(c, op, dtype, nranks, rank, root, per_rank_count, first + k)));
      double got = toDouble(p[k]);
      wrong += rel_tol == 0 ? !(got == want) : !(std::fabs(got - want) <= rel_tol * std::fabs(want));
    }
  });
  return wrong;
}

}  // namespace psdp::perf
