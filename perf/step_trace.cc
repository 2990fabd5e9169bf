#include "step_trace.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace psdp::perf {
namespace {

constexpr size_t kWords = 4;  // chunk, stage, begin_ns, end_ns

}  // namespace

const char* stepStageName(int stage) {
  switch (stage) {
    case PSDP_STAGE_REDUCE_IN_GROUP: return "reduce in group";
    case PSDP_STAGE_REDUCE_ACROSS_REPLICAS: return "reduce across replicas";
    case PSDP_STAGE_UPDATE: return "update";
    case PSDP_STAGE_GATHER_ACROSS_REPLICAS: return "gather across replicas";
    case PSDP_STAGE_GATHER_IN_GROUP: return "gather in group";
    default: return "?";
  }
}

bool writeStepTrace(psdp_comm_h comm, psdp_state_h state, const std::string& path) {
  int rank = 0, nranks = 1;
  psdp_comm_rank(comm, &rank);
  psdp_comm_size(comm, &nranks);
  size_t count = 0;
  psdp_state_step_events(state, nullptr, 0, &count);
  std::vector<psdp_step_event_t> events(count);
  psdp_state_step_events(state, events.data(), count, &count);
  // Every rank's count, then every rank's events padded to the largest.
  uint64_t mine = count;
  std::vector<uint64_t> counts(static_cast<size_t>(nranks));
  if (psdp_all_gather(&mine, counts.data(), 1, PSDP_UINT64, comm, nullptr, nullptr) != PSDP_SUCCESS) return false;
  const size_t most = *std::max_element(counts.begin(), counts.end());
  std::vector<uint64_t> words(most * kWords, 0), all(words.size() * static_cast<size_t>(nranks));
  for (size_t i = 0; i < count; ++i) {
    words[i * kWords + 0] = events[i].chunk;
    words[i * kWords + 1] = static_cast<uint64_t>(events[i].stage);
    words[i * kWords + 2] = events[i].begin_ns;
    words[i * kWords + 3] = events[i].end_ns;
  }
  if (most > 0 &&
      psdp_all_gather(words.data(), all.data(), words.size(), PSDP_UINT64, comm, nullptr, nullptr) != PSDP_SUCCESS) {
    return false;
  }
  if (rank != 0) return true;
  uint64_t origin = UINT64_MAX;
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < counts[static_cast<size_t>(r)]; ++i) {
      origin = std::min(origin, all[(static_cast<size_t>(r) * most + i) * kWords + 2]);
    }
  }
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "psdp-perf step: cannot write the trace to %s\n", path.c_str());
    return false;
  }
  std::fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  bool first = true;
  for (int r = 0; r < nranks; ++r) {
    std::fprintf(f, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": \"rank %d\"}}",
                 first ? "" : ",\n", r, r);
    first = false;
    for (size_t i = 0; i < counts[static_cast<size_t>(r)]; ++i) {
      const uint64_t* w = &all[(static_cast<size_t>(r) * most + i) * kWords];
      const char* stage = stepStageName(static_cast<int>(w[1]));
      for (int end = 0; end < 2; ++end) {
        std::fprintf(f,
                     ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"%s\", \"id\": %llu, \"pid\": %d, \"tid\": 0, "
                     "\"ts\": %.3f, \"args\": {\"chunk\": %llu}}",
                     stage, stage, end == 0 ? "b" : "e", static_cast<unsigned long long>(w[0]), r,
                     static_cast<double>(w[2 + end] - origin) / 1e3, static_cast<unsigned long long>(w[0]));
      }
    }
  }
  std::fprintf(f, "\n]}\n");
  return std::fclose(f) == 0;
}

}  // namespace psdp::perf
