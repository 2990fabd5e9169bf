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

std::vector<int> spreadOverNics(const std::vector<std::vector<int>>& closest, int nic_count) {
  const int items = static_cast<int>(closest.size());
  std::vector<int> order(items);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&closest](int a, int b) { return closest[a].size() < closest[b].size(); });

  std::vector<int> chosen(items, -1);
  std::vector<int> load(nic_count, 0);
  for (int i : order) {
    const std::vector<int>& options = closest[i];
    if (options.empty()) continue;
    // min_element keeps the first of equal minima: the earliest option wins a tie in load.
    int nic = *std::min_element(options.begin(), options.end(), [&load](int a, int b) { return load[a] < load[b]; });
    ++load[nic];
    chosen[i] = nic;
  }
  return chosen;
}

std::vector<NicChoice> chooseNics(const Topology& t) {
  const int gpus = static_cast<int>(t.gpus.size());
  std::vector<int> candidates = candidateNics(t);
  std::vector<ClosestNics> closest(gpus);
  std::vector<std::vector<int>> options(gpus);
  for (int g = 0; g < gpus && !candidates.empty(); ++g) {
    closest[g] = closestNics(t, g, candidates);
    options[g] = closest[g].nics;
  }
  std::vector<int> chosen = spreadOverNics(options, static_cast<int>(t.nics.size()));
  std::vector<NicChoice> choices(gpus);
  for (int g = 0; g < gpus; ++g) {
    // Without candidates the path stays SYS: there is no NIC to be close to.
    choices[g] = NicChoice{g, chosen[g], chosen[g] < 0 ? PathClass::kSys : closest[g].path};
  }
  return choices;
}

}  // namespace psdp::topo
