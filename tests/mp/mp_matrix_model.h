// The expected-value model of the collective correctness matrix (mp_matrix.cc): what every rank feeds each
// (dtype, op) and what every result element must be, exactly.
//
// Checks are exact, as in nccl-tests, so the inputs are chosen per op to keep every result and every
// partial result (float16 and bfloat16 round after each combine) exactly representable in every dtype for
// up to 8 ranks: bfloat16 holds integers up to 256, float16 up to 2048, int8 up to 127, uint8 up to 255.
// Inputs depend on (rank, index mod kPeriod) only, so a case fills and checks a large buffer by copying one
// period (see Tile in mp_matrix.cc) instead of evaluating the model per element.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <string>

namespace psdp::mp {

// A prime, so that block offsets (rank * count) fall at a different phase of the pattern for every count
// the matrix uses, and a block written to the wrong place does not match by accident.
constexpr size_t kPeriod = 1009;

// The ops of the matrix: psdp_op_t's built-ins in their order, then premul-sum.
enum class Op { kSum, kProd, kMin, kMax, kAvg, kPremulSum };
constexpr int kNumOps = 6;

const char* dtypeName(psdp_dtype_t dtype);
const char* opName(Op op);
size_t dtypeSize(psdp_dtype_t dtype);

// Writes `value` as one element of dtype; aborts if it is not exactly representable (a model bug).
void storeValue(psdp_dtype_t dtype, double value, void* dst);
// One element of dtype as a double (exact for every value the model produces).
double loadValue(psdp_dtype_t dtype, const void* src);
// NaN for float dtypes, the largest value for integers: never a result, so an unwritten element shows.
void storeSentinel(psdp_dtype_t dtype, void* dst);
// The element as text, for failure messages ("nan" shows an element the collective did not write).
std::string formatValue(psdp_dtype_t dtype, const void* src);

// Rank `rank`'s input at index i of a reduction with `op` over `nranks` ranks.
double reduceInput(psdp_dtype_t dtype, Op op, int rank, int nranks, size_t i);
// The scalar rank `rank` passes to psdp_op_create_premul_sum: small, different on neighbouring ranks.
double premulScalar(psdp_dtype_t dtype, int rank);
// Element i of the reduction of every rank's reduceInput.
double reduceExpected(psdp_dtype_t dtype, Op op, int nranks, size_t i);
// Rank `rank`'s input at index i of an all-gather or a broadcast: spread over the dtype's range so that
// misplaced bytes show.
double moveInput(psdp_dtype_t dtype, int rank, size_t i);

}  // namespace psdp::mp
