// Input data and exact verification of psdp-perf for every dtype and op.
//
// As nccl-tests, the inputs are small integers chosen per op so that every result is exactly representable
// in every dtype, half and bfloat16 included (bfloat16 holds integers up to 256 exactly): any difference
// from the expectation is a wrong element, with no tolerance to hide a bug behind.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>

#include "perf_options.h"

namespace psdp::perf {

// The multiplier of premul-sum, stored in `dtype` into `out` (8 bytes suffice for every dtype).
void premulScalar(psdp_dtype_t dtype, void* out);

// Writes rank `rank`'s input for elements [first, first + count) of the collective's index space to `buf`.
void fillInput(Collective c, Reduction op, psdp_dtype_t dtype, int rank, int root, size_t first, size_t count,
               void* buf);

// Writes a value no correct result equals (NaN for floats, the type's maximum for integers, beyond every
// input and result) so that a call that leaves recvbuf untouched is caught.
void fillGarbage(psdp_dtype_t dtype, size_t count, void* buf);

// Counts elements of `buf` (elements [first, first + count) of rank `rank`'s result index space) that differ
// from the exact result over `nranks` ranks.
//
// Index spaces: the reductions and broadcast have one of `count` elements; all-gather and gather of nranks
// blocks of per_rank_count, rank r's input being block r; scatter the root's nranks blocks, rank r receiving
// block r; all-to-all, every rank's input is nranks blocks (block d goes to rank d) and its result block s is
// block `rank` of rank s's input; send/recv, the result is the input of rank - 1.
long long countWrong(Collective c, Reduction op, psdp_dtype_t dtype, int nranks, int rank, int root,
                     size_t per_rank_count, size_t first, size_t count, const void* buf);

// Exposed for the unit test: float <-> half / bfloat16 bits, round to nearest even.
unsigned short floatToHalf(float f);
float halfToFloat(unsigned short h);
unsigned short floatToBfloat16(float f);
float bfloat16ToFloat(unsigned short b);

}  // namespace psdp::perf
