// How fast CMA (readProcessMemory) reads another process's memory, next to memcpy of the same bytes from
// this process's own memory into the same destination. Direct collectives on private buffers read the other
// ranks' blocks this way, a fetch tile at a time into this core's cache (coll/direct_kernels.h), so this is
// the ceiling of their copy; tile sizes 64 KiB to 4 MiB. Both sources are 256 MiB of huge-page-advised
// anonymous memory, written once before timing, and the child whose memory CMA reads is a fork of this
// process that waits on a pipe. Not a CTest test: run build/bin/cross_memory_bench by hand (e.g.
// --benchmark_repetitions=5 --benchmark_report_aggregates_only=true).
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "transport/cross_memory.h"

namespace psdp::transport {
namespace {

constexpr size_t kSourceBytes = size_t{256} << 20;
constexpr size_t kHugePage = size_t{2} << 20;
constexpr int64_t kMinTile = int64_t{64} << 10;
constexpr int64_t kMaxTile = int64_t{4} << 20;

// kSourceBytes of huge-page-advised memory starting on a huge-page boundary, every page written.
std::byte* mapSource(int fill) {
  void* base = mmap(nullptr, kSourceBytes + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    std::perror("cross_memory_bench: mmap");
    std::exit(1);
  }
  auto aligned = (reinterpret_cast<uintptr_t>(base) + kHugePage - 1) / kHugePage * kHugePage;
  auto* data = reinterpret_cast<std::byte*>(aligned);
  (void)madvise(data, kSourceBytes, MADV_HUGEPAGE);
  std::memset(data, fill, kSourceBytes);
  return data;
}

// The sources and the child, made once for every benchmark. The child keeps the parent's pages at the same
// addresses (copy on write, never written), so CMA reads the same physical memory memcpy would.
struct Sources {
  std::byte* remote = nullptr;  // read in the child
  std::byte* local = nullptr;   // read here
  std::byte* tile = nullptr;    // kMaxTile, written by both
  pid_t child = -1;
  int release_fd = -1;

  Sources() {
    remote = mapSource(1);
    local = mapSource(2);
    tile = static_cast<std::byte*>(std::aligned_alloc(4096, kMaxTile));
    std::memset(tile, 0, kMaxTile);
    int fds[2];
    if (pipe(fds) != 0) {
      std::perror("cross_memory_bench: pipe");
      std::exit(1);
    }
    child = fork();
    if (child == 0) {
      close(fds[1]);
      char byte;
      (void)!read(fds[0], &byte, 1);  // returns at EOF: the parent exited or released the child
      _exit(0);
    }
    close(fds[0]);
    release_fd = fds[1];
  }
  ~Sources() {
    close(release_fd);
    if (child > 0) waitpid(child, nullptr, 0);
  }
};

Sources& sources() {
  static Sources s;
  return s;
}

void cmaRead(benchmark::State& state) {
  Sources& s = sources();
  const auto tile = static_cast<size_t>(state.range(0));
  size_t offset = 0;
  for (auto _ : state) {
    Status status =
        readProcessMemory(static_cast<uint32_t>(s.child), reinterpret_cast<uint64_t>(s.remote + offset), s.tile, tile);
    if (!status.isOk()) {
      state.SkipWithError(status.toString().c_str());
      break;
    }
    offset = (offset + tile) % kSourceBytes;
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void localMemcpy(benchmark::State& state) {
  Sources& s = sources();
  const auto tile = static_cast<size_t>(state.range(0));
  size_t offset = 0;
  for (auto _ : state) {
    std::memcpy(s.tile, s.local + offset, tile);
    offset = (offset + tile) % kSourceBytes;
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

BENCHMARK(cmaRead)->Name("BM_CmaRead")->RangeMultiplier(4)->Range(kMinTile, kMaxTile);
BENCHMARK(localMemcpy)->Name("BM_Memcpy")->RangeMultiplier(4)->Range(kMinTile, kMaxTile);

}  // namespace
}  // namespace psdp::transport

BENCHMARK_MAIN();
