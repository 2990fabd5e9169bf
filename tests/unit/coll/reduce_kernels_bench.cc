// The sum kernels (fp32, bf16, fp16, int32) against memcpy, 1 MiB to 64 MiB per buffer. Throughput is
// counted in output bytes; a sum moves three bytes per output byte (two reads, one write) and memcpy two,
// so a memory-bound kernel runs at about 2/3 of memcpy's figure. BM_<Kernel> uses the level the library
// selects for this CPU; BM_<Kernel>/<level> forces each supported instruction-set level (reduce_kernels.h),
// to compare them. Not a CTest test: run build/bin/coll_kernel_bench by hand (e.g.
// --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_min_time=0.2).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "coll/half.h"
#include "coll/reduce_kernels.h"

namespace psdp::coll {
namespace {

constexpr int64_t kMinBytes = int64_t{1} << 20;
constexpr int64_t kMaxBytes = int64_t{64} << 20;

template <typename T>
void sum(benchmark::State& state, psdp_dtype_t dtype, T one, bool in_place, KernelIsa isa) {
  const auto count = static_cast<size_t>(state.range(0)) / sizeof(T);
  std::vector<T> a(count, one);
  std::vector<T> b(count, one);
  std::vector<T> out(count, T{});
  T* dst = in_place ? a.data() : out.data();
  ReduceKernel kernel = findReduceKernel(dtype, PSDP_SUM, isa);
  for (auto _ : state) {
    kernel.combine(dst, a.data(), b.data(), count);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void memcpyBench(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  std::vector<char> src(bytes, 1);
  std::vector<char> dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void registerSums(const std::string& suffix, KernelIsa isa) {
  auto add = [&](const char* name, auto fn) {
    benchmark::RegisterBenchmark((std::string("BM_") + name + suffix).c_str(), fn)
        ->RangeMultiplier(8)
        ->Range(kMinBytes, kMaxBytes);
  };
  add("Fp32Sum", [isa](benchmark::State& s) { sum<float>(s, PSDP_FLOAT32, 1.0f, false, isa); });
  add("Fp32SumInPlace", [isa](benchmark::State& s) { sum<float>(s, PSDP_FLOAT32, 1.0f, true, isa); });
  add("Bf16Sum", [isa](benchmark::State& s) { sum<uint16_t>(s, PSDP_BFLOAT16, floatToBf16(1.0f), false, isa); });
  add("Fp16Sum", [isa](benchmark::State& s) { sum<uint16_t>(s, PSDP_FLOAT16, floatToFp16(1.0f), false, isa); });
  add("Int32Sum", [isa](benchmark::State& s) { sum<int32_t>(s, PSDP_INT32, 1, false, isa); });
}

void registerAll() {
  registerSums("", selectedKernelIsa());
  benchmark::RegisterBenchmark("BM_Memcpy", memcpyBench)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes);
  for (int i = 0; i < kNumKernelIsas; ++i) {
    auto isa = static_cast<KernelIsa>(i);
    if (kernelIsaSupported(isa)) registerSums(std::string("/") + kernelIsaName(isa), isa);
  }
}

}  // namespace
}  // namespace psdp::coll

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  psdp::coll::registerAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
