// The sum kernels (fp32, bf16, fp16, int32) against memcpy, 1 MiB to 64 MiB per buffer. Throughput is
// counted in output bytes; a sum moves three bytes per output byte (two reads, one write) and memcpy two,
// so a memory-bound kernel runs at about 2/3 of memcpy's figure. Not a CTest test: run
// build/bin/coll_kernel_bench by hand (e.g. --benchmark_repetitions=5 --benchmark_report_aggregates_only).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "coll/half.h"
#include "coll/reduce_kernels.h"

namespace psdp::coll {
namespace {

constexpr int64_t kMinBytes = int64_t{1} << 20;
constexpr int64_t kMaxBytes = int64_t{64} << 20;

template <typename T>
void sum(benchmark::State& state, psdp_dtype_t dtype, T one, bool in_place) {
  const auto count = static_cast<size_t>(state.range(0)) / sizeof(T);
  std::vector<T> a(count, one);
  std::vector<T> b(count, one);
  std::vector<T> out(count, T{});
  T* dst = in_place ? a.data() : out.data();
  ReduceKernel kernel = findReduceKernel(dtype, PSDP_SUM);
  for (auto _ : state) {
    kernel.combine(dst, a.data(), b.data(), count);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_Fp32Sum(benchmark::State& state) {
  sum<float>(state, PSDP_FLOAT32, 1.0f, false);
}
void BM_Fp32SumInPlace(benchmark::State& state) {
  sum<float>(state, PSDP_FLOAT32, 1.0f, true);
}
void BM_Bf16Sum(benchmark::State& state) {
  sum<uint16_t>(state, PSDP_BFLOAT16, floatToBf16(1.0f), false);
}
void BM_Fp16Sum(benchmark::State& state) {
  sum<uint16_t>(state, PSDP_FLOAT16, floatToFp16(1.0f), false);
}
void BM_Int32Sum(benchmark::State& state) {
  sum<int32_t>(state, PSDP_INT32, 1, false);
}

void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  std::vector<char> src(bytes, 1);
  std::vector<char> dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

BENCHMARK(BM_Fp32Sum)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes);
BENCHMARK(BM_Fp32SumInPlace)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes);
BENCHMARK(BM_Bf16Sum)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes);
BENCHMARK(BM_Fp16Sum)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes);
BENCHMARK(BM_Int32Sum)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes);
BENCHMARK(BM_Memcpy)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes);

}  // namespace
}  // namespace psdp::coll

BENCHMARK_MAIN();
