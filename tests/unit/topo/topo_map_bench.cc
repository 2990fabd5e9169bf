// How long mapping a large job takes, stage by stage: 128 hosts of one 8-GPU machine (1024 ranks). Run by
// hand (not a CTest test); see perf/README.md. Prints the median of each stage over the repetitions.
//
//   topo_map_bench [topology file] [repetitions]
//
// Stages, as a real init would run them: load the machine file (a live rank discovers instead, timed
// separately), describe every rank, encode and decode every descriptor (the bootstrap exchange minus the
// network), and map for shard groups of one host (G=8) and of eight hosts (G=64).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "topo/mapper.h"
#include "topo/rank_descriptor.h"
#include "topo/topology_source.h"

namespace {

using psdp::Result;
using namespace psdp::topo;

constexpr int kHosts = 128;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "topo_map_bench: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T must(Result<T> result) {
  if (!result.isOk()) die(result.status().toString());
  return std::move(result).value();
}

double millisecondsOf(const std::function<void()>& stage) {
  auto start = std::chrono::steady_clock::now();
  stage();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Stage {
  const char* name;
  std::vector<double> ms;
};

}  // namespace

int main(int argc, char** argv) {
  std::string file = argc > 1 ? argv[1] : PSDP_TOPOLOGY_DIR "/nccl/azure-ndv4-topo.xml";
  int repetitions = argc > 2 ? std::atoi(argv[2]) : 20;
  if (repetitions < 1) die("repetitions must be at least 1");

  Stage load{"load file", {}}, describe{"describeRank x ranks", {}}, codec{"encode+decode x ranks", {}};
  Stage map8{"mapRanks G=8", {}}, map64{"mapRanks G=64", {}}, total{"total", {}}, discover{"discoverMachine", {}};
  int world = 0;
  size_t wire_bytes = 0;
  for (int rep = 0; rep < repetitions; ++rep) {
    Topology topology;
    std::vector<RankDescriptor> ranks;
    std::vector<RankDescriptor> received;
    load.ms.push_back(millisecondsOf([&] { topology = must(loadTopologyFile(file)); }));
    if (topology.gpus.empty()) die(file + " has no GPUs");
    world = kHosts * static_cast<int>(topology.gpus.size());
    describe.ms.push_back(millisecondsOf([&] {
      for (int h = 0; h < kHosts; ++h) {
        for (const Gpu& gpu : topology.gpus) {
          ranks.push_back(must(describeRank(topology, "host" + std::to_string(h), topology.pci[gpu.pci].bus_id, -1)));
        }
      }
    }));
    codec.ms.push_back(millisecondsOf([&] {
      wire_bytes = 0;
      for (const RankDescriptor& d : ranks) {
        std::vector<std::byte> wire = encodeDescriptor(d);
        wire_bytes += wire.size();
        received.push_back(must(decodeDescriptor(wire)));
      }
    }));
    map8.ms.push_back(millisecondsOf([&] { must(mapRanks(received, 8)); }));
    map64.ms.push_back(millisecondsOf([&] { must(mapRanks(received, 64)); }));
    total.ms.push_back(load.ms.back() + describe.ms.back() + codec.ms.back() + map8.ms.back() + map64.ms.back());
    discover.ms.push_back(millisecondsOf([&] { must(discoverMachine()); }));
  }

  std::printf("topo_map_bench: %s, %d hosts x %d GPUs = %d ranks, %zu descriptor bytes in all, median of %d\n",
              file.c_str(), kHosts, world / kHosts, world, wire_bytes, repetitions);
  for (const Stage* stage : {&load, &describe, &codec, &map8, &map64, &total, &discover}) {
    std::printf("  %-24s %9.3f ms\n", stage->name, median(stage->ms));
  }
  std::printf("  (total: every stage but discoverMachine, which each rank runs once on its own host)\n");
  return 0;
}
