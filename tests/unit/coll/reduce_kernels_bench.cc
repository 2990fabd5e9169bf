// The fp32 sum kernel against memcpy, 1 MiB to 64 MiB per buffer. Throughput is counted in output bytes;
// a sum moves three bytes per output byte (two reads, one write) and memcpy two, so a memory-bound kernel
// runs at about 2/3 of memcpy's figure. Not a CTest test: run build/bin/coll_kernel_bench by hand.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "coll/reduce_kernels.h"

namespace psdp::coll {
namespace {

constexpr int64_t kMinBytes = int64_t{1} << 20;
constexpr int64_t kMaxBytes = int64_t{64} << 20;

void fp32Sum(benchmark::State& state, bool in_place) {
  const auto count = static_cast<size_t>(state.range(0)) / sizeof(float);
  std::vector<float> a(count, 1.0f);
  std::vector<float> b(count, 2.0f);
  std::vector<float> out(count, 0.0f);
  float* dst = in_place ? a.data() : out.data();
  ReduceKernel kernel = findReduceKernel(PSDP_FLOAT32, PSDP_SUM);
  for (auto _ : state) {
    kernel.combine(dst, a.data(), b.data(), count);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_Fp32SumOutOfPlace(benchmark::State& state) {
  fp32Sum(state, false);
}
void BM_Fp32SumInPlace(benchmark::State& state) {
  fp32Sum(state, true);
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

BENCHMARK(BM_Fp32SumOutOfPlace)->RangeMultiplier(4)->Range(kMinBytes, kMaxBytes);
BENCHMARK(BM_Fp32SumInPlace)->RangeMultiplier(4)->Range(kMinBytes, kMaxBytes);
BENCHMARK(BM_Memcpy)->RangeMultiplier(4)->Range(kMinBytes, kMaxBytes);

}  // namespace
}  // namespace psdp::coll

BENCHMARK_MAIN();
