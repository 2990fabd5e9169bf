#include "mp_matrix_model.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace psdp::mp {
namespace {

bool isFloat(psdp_dtype_t d) {
  return d == PSDP_FLOAT16 || d == PSDP_BFLOAT16 || d == PSDP_FLOAT32 || d == PSDP_FLOAT64;
}

bool allowsNegative(psdp_dtype_t d) {
  return isFloat(d) || d == PSDP_INT8 || d == PSDP_INT32 || d == PSDP_INT64;
}

// float16 from a double that it holds exactly (normal or subnormal); inexact values are caught by the
// round trip in storeValue, so no rounding is needed here.
uint16_t toFp16(double v) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  double a = std::fabs(v);
  if (a == 0) return sign;
  int e = 0;
  double f = std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  int biased = e - 1 + 15;
  if (biased >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (biased <= 0) return static_cast<uint16_t>(sign | static_cast<uint16_t>(a * 16777216.0));  // a / 2^-24
  auto mantissa = static_cast<uint16_t>((2 * f - 1) * 1024);
  return static_cast<uint16_t>(sign | (biased << 10) | mantissa);
}

double fromFp16(uint16_t h) {
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  int biased = (h >> 10) & 31;
  int mantissa = h & 1023;
  if (biased == 31) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
  if (biased == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, biased - 25);
}

uint16_t toBf16(double v) {
  auto f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);  // truncation: inexact values fail the round trip
}

double fromBf16(uint16_t h) {
  uint32_t bits = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <typename T>
void put(T value, void* dst) {
  std::memcpy(dst, &value, sizeof value);
}

template <typename T>
T get(const void* src) {
  T value;
  std::memcpy(&value, src, sizeof value);
  return value;
}

}  // namespace

const char* dtypeName(psdp_dtype_t dtype) {
  static const char* const kNames[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                       "uint64", "float16", "bfloat16", "float32", "float64"};
  return dtype >= 0 && dtype < PSDP_NUM_DTYPES ? kNames[dtype] : "?";
}

const char* opName(Op op) {
  static const char* const kNames[] = {"sum", "prod", "min", "max", "avg", "premul-sum"};
  return kNames[static_cast<int>(op)];
}

size_t dtypeSize(psdp_dtype_t dtype) {
  switch (dtype) {
    case PSDP_INT8:
    case PSDP_UINT8: return 1;
    case PSDP_FLOAT16:
    case PSDP_BFLOAT16: return 2;
    case PSDP_INT32:
    case PSDP_UINT32:
    case PSDP_FLOAT32: return 4;
    default: return 8;
  }
}

void storeValue(psdp_dtype_t dtype, double value, void* dst) {
  switch (dtype) {
    case PSDP_INT8: put(static_cast<int8_t>(value), dst); break;
    case PSDP_UINT8: put(static_cast<uint8_t>(value), dst); break;
    case PSDP_INT32: put(static_cast<int32_t>(value), dst); break;
    case PSDP_UINT32: put(static_cast<uint32_t>(value), dst); break;
    case PSDP_INT64: put(static_cast<int64_t>(value), dst); break;
    case PSDP_UINT64: put(static_cast<uint64_t>(value), dst); break;
    case PSDP_FLOAT16: put(toFp16(value), dst); break;
    case PSDP_BFLOAT16: put(toBf16(value), dst); break;
    case PSDP_FLOAT32: put(static_cast<float>(value), dst); break;
    default: put(value, dst); break;
  }
  if (loadValue(dtype, dst) != value) {
    std::fprintf(stderr, "model bug: %.17g is not exact in %s\n", value, dtypeName(dtype));
    std::abort();
  }
}

double loadValue(psdp_dtype_t dtype, const void* src) {
  switch (dtype) {
    case PSDP_INT8: return get<int8_t>(src);
    case PSDP_UINT8: return get<uint8_t>(src);
    case PSDP_INT32: return get<int32_t>(src);
    case PSDP_UINT32: return get<uint32_t>(src);
    case PSDP_INT64: return static_cast<double>(get<int64_t>(src));
    case PSDP_UINT64: return static_cast<double>(get<uint64_t>(src));
    case PSDP_FLOAT16: return fromFp16(get<uint16_t>(src));
    case PSDP_BFLOAT16: return fromBf16(get<uint16_t>(src));
    case PSDP_FLOAT32: return get<float>(src);
    default: return get<double>(src);
  }
}

void storeSentinel(psdp_dtype_t dtype, void* dst) {
  switch (dtype) {
    case PSDP_INT8: put(std::numeric_limits<int8_t>::max(), dst); break;
    case PSDP_UINT8: put(std::numeric_limits<uint8_t>::max(), dst); break;
    case PSDP_INT32: put(std::numeric_limits<int32_t>::max(), dst); break;
    case PSDP_UINT32: put(std::numeric_limits<uint32_t>::max(), dst); break;
    case PSDP_INT64: put(std::numeric_limits<int64_t>::max(), dst); break;
    case PSDP_UINT64: put(std::numeric_limits<uint64_t>::max(), dst); break;
    case PSDP_FLOAT16: put(uint16_t{0x7e00}, dst); break;
    case PSDP_BFLOAT16: put(uint16_t{0x7fc0}, dst); break;
    case PSDP_FLOAT32: put(std::numeric_limits<float>::quiet_NaN(), dst); break;
    default: put(std::numeric_limits<double>::quiet_NaN(), dst); break;
  }
}

std::string formatValue(psdp_dtype_t dtype, const void* src) {
  char text[64];
  // 64-bit integers are printed from their bits: the sentinel does not survive a trip through double.
  if (dtype == PSDP_INT64) {
    std::snprintf(text, sizeof text, "%lld", static_cast<long long>(get<int64_t>(src)));
  } else if (dtype == PSDP_UINT64) {
    std::snprintf(text, sizeof text, "%llu", static_cast<unsigned long long>(get<uint64_t>(src)));
  } else {
    std::snprintf(text, sizeof text, "%.17g", loadValue(dtype, src));
  }
  return text;
}

// Bounds, for at most 8 ranks (signed dtypes / unsigned dtypes):
//   sum         inputs in [-15, 15] / [0, 30]: any partial sum within [-120, 120] / [0, 240]
//   prod        inputs in {1, 2, -1, 0}, at most 3 ranks hold a 2 at any index: |product| <= 8
//   min, max    inputs in [-8, 7] / [1, 16], different on every rank at each index
//   avg         pairs of ranks hold m + c and m - c (an odd last rank holds m), so float sums divide by
//               nranks exactly; integer dtypes add -1, 0 or 1 (unsigned: 0, 1 or 2) on rank 0, so their sums
//               often do not divide, and the truncation toward zero of integer avg is checked, negative sums
//               included
//   premul-sum  inputs in [-5, 5] / [0, 10], scalars in {1, 2, 3, -1, -2, -3} / {1, 2, 3}: |sum| <= 120 / 240
double reduceInput(psdp_dtype_t dtype, Op op, int rank, int nranks, size_t i) {
  const auto j = static_cast<int64_t>(i % kPeriod);
  const int64_t r = rank;
  const bool neg = allowsNegative(dtype);
  switch (op) {
    case Op::kSum: {
      int64_t v = (r * 7 + j * 13 + 3) % 31;
      return static_cast<double>(neg ? v - 15 : v);
    }
    case Op::kProd:
      if ((r + j) % 3 == 0) return 2;
      if (r == 1 && j % 97 == 13) return 0;
      if (neg && (r * 3 + j) % 7 == 1) return -1;
      return 1;
    case Op::kMin:
    case Op::kMax: {
      int64_t v = (r * 5 + j * 3) % 16;  // 5 is odd: 16 consecutive ranks differ
      return static_cast<double>(neg ? v - 8 : v + 1);
    }
    case Op::kAvg: {
      int64_t m = (j * 11) % 15 + (neg ? -7 : 3);
      int64_t c = (j + r / 2) % 4;
      int64_t d = (r ^ 1) < nranks ? (r % 2 == 0 ? c : -c) : 0;
      int64_t extra = !isFloat(dtype) && r == 0 ? j % 3 - (neg ? 1 : 0) : 0;
      return static_cast<double>(m + d + extra);
    }
    case Op::kPremulSum: {
      int64_t v = (r * 3 + j * 7) % 11;
      return static_cast<double>(neg ? v - 5 : v);
    }
  }
  return 0;
}

double premulScalar(psdp_dtype_t dtype, int rank) {
  double s = rank % 3 + 1;
  return allowsNegative(dtype) && (rank / 3) % 2 == 1 ? -s : s;
}

double reduceExpected(psdp_dtype_t dtype, Op op, int nranks, size_t i) {
  double acc = reduceInput(dtype, op, 0, nranks, i);
  if (op == Op::kPremulSum) acc *= premulScalar(dtype, 0);
  for (int r = 1; r < nranks; ++r) {
    double x = reduceInput(dtype, op, r, nranks, i);
    switch (op) {
      case Op::kSum:
      case Op::kAvg: acc += x; break;
      case Op::kProd: acc *= x; break;
      case Op::kMin: acc = std::fmin(acc, x); break;
      case Op::kMax: acc = std::fmax(acc, x); break;
      case Op::kPremulSum: acc += premulScalar(dtype, r) * x; break;
    }
  }
  if (op == Op::kAvg) acc = isFloat(dtype) ? acc / nranks : std::trunc(acc / nranks);
  return acc;
}

double moveInput(psdp_dtype_t dtype, int rank, size_t i) {
  const auto j = static_cast<int64_t>(i % kPeriod);
  const int64_t r = rank;
  switch (dtype) {
    case PSDP_INT8: return static_cast<double>((r * 131 + j) % 256 - 128);
    case PSDP_UINT8: return static_cast<double>((r * 131 + j) % 256);
    case PSDP_INT32: return static_cast<double>(r * 100003 + j - 400000);
    case PSDP_UINT32: return static_cast<double>(r * 100003 + j + 3000000000LL);
    // Below 2^53 so that the double model holds them, but with the upper bytes in use.
    case PSDP_INT64: return static_cast<double>((r << 33) + j - (int64_t{1} << 50));
    case PSDP_UINT64: return static_cast<double>((r << 33) + j + (int64_t{1} << 52));
    case PSDP_FLOAT16: return static_cast<double>((r * 131 + j) % 4096 - 2048);
    case PSDP_BFLOAT16: return static_cast<double>((r * 131 + j) % 512 - 256);
    case PSDP_FLOAT32: return static_cast<double>(r * 100003 - 400000) + static_cast<double>(j) * 0.25;
    default: return static_cast<double>((r << 33) - (int64_t{1} << 40)) + static_cast<double>(j) * 0.125;
  }
}

}  // namespace psdp::mp
