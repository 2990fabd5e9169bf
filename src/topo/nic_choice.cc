#include "topo/nic_choice.h"

#include <algorithm>
#include <numeric>

namespace psdp::topo {
namespace {

std::vector<int> candidateNics(const Topology& t) {
  bool any_fabric = countNics(t, NicKind::kFabric) > 0;
  std::vector<int> nics;
  for (int i = 0; i < static_cast<int>(t.nics.size()); ++i) {
    if (!any_fabric || t.nics[i].kind == NicKind::kFabric) nics.push_back(i);
  }
  return nics;
}

// The NICs at the best path class from one GPU, and that class.
struct ClosestNics {
  PathClass path = PathClass::kSys;
  std::vector<int> nics;
};

ClosestNics closestNics(const Topology& t, int gpu, const std::vector<int>& candidates) {
  ClosestNics best;
  for (int nic : candidates) {
    PathClass path = classifyPath(t, DeviceRef::gpu(gpu), DeviceRef::nic(nic));
    if (best.nics.empty() || path < best.path) {
      best.path = path;
      best.nics.clear();
    }
    if (path == best.path) best.nics.push_back(nic);
  }
  return best;
}

}  // namespace

std::vector<NicChoice> chooseNics(const Topology& t) {
  const int gpus = static_cast<int>(t.gpus.size());
  std::vector<int> candidates = candidateNics(t);
  std::vector<NicChoice> choices(gpus);
  if (candidates.empty()) {
    for (int g = 0; g < gpus; ++g) choices[g] = NicChoice{g, -1, PathClass::kSys};
    return choices;
  }
  std::vector<ClosestNics> closest(gpus);
  for (int g = 0; g < gpus; ++g) closest[g] = closestNics(t, g, candidates);
  std::vector<int> order(gpus);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&closest](int a, int b) { return closest[a].nics.size() < closest[b].nics.size(); });

  std::vector<int> load(t.nics.size(), 0);
  for (int g : order) {
    const std::vector<int>& options = closest[g].nics;
    int nic = *std::min_element(options.begin(), options.end(), [&load](int a, int b) { return load[a] < load[b]; });
    ++load[nic];
    choices[g] = NicChoice{g, nic, closest[g].path};
  }
  return choices;
}

}  // namespace psdp::topo
