// Ranks that call different collectives: every rank's call fails with PSDP_ERR_MISMATCH within seconds,
// never a hang or a silently wrong result, and every rank's error names both calls. One scenario per child
// communicator (psdp_comm_split), so that the parent stays usable between them. The odd one out is the last
// rank; with three ranks or more some ranks are not its neighbours and learn of it from a notice.
//
// Scenarios: another collective, another count (0 included), dtype (of the same size, so that the data
// alone would match), op, or root, a skipped call, and a nonblocking post.
#include <psdp/psdp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kMaxSecondsToError = 5.0;
constexpr size_t kCount = 1000;

struct Scenario {
  const char* name;
  // What the ranks that agree call, and what the last rank calls instead.
  std::function<psdp_status_t(psdp_comm_h)> agreed;
  std::function<psdp_status_t(psdp_comm_h)> odd;
  // Words every rank's error must contain: the two calls, as the header describes them.
  std::string agreed_words;
  std::string odd_words;
};

struct Buffers {
  std::vector<int32_t> send;
  std::vector<int32_t> recv;
};

psdp_status_t allReduce(psdp_comm_h comm, Buffers& b, size_t count, psdp_dtype_t dtype, psdp_op_t op) {
  return psdp_all_reduce(b.send.data(), b.recv.data(), count, dtype, op, comm, nullptr, nullptr);
}

psdp_status_t waitPosted(psdp_comm_h comm, Buffers& b, psdp_dtype_t dtype) {
  psdp_request_h request = nullptr;
  psdp_status_t s = psdp_all_reduce(b.send.data(), b.recv.data(), kCount, dtype, PSDP_SUM, comm, nullptr, &request);
  if (s != PSDP_SUCCESS) return s;
  s = psdp_request_wait(request);
  psdp_request_free(request);
  return s;
}

std::vector<Scenario> scenarios(Buffers& b, int nranks) {
  auto reduce = [&b](size_t count, psdp_dtype_t dtype, psdp_op_t op) {
    return [&b, count, dtype, op](psdp_comm_h c) { return allReduce(c, b, count, dtype, op); };
  };
  auto bcast = [&b](int root) {
    return [&b, root](psdp_comm_h c) {
      return psdp_broadcast(b.send.data(), b.recv.data(), kCount, PSDP_INT32, root, c, nullptr, nullptr);
    };
  };
  auto gather = [&b](int root) {
    return [&b, root](psdp_comm_h c) {
      return psdp_gather(b.send.data(), b.recv.data(), kCount, PSDP_INT32, root, c, nullptr, nullptr);
    };
  };
  auto allGatherV = [](Buffers& b, std::vector<size_t> counts) {
    return [&b, counts](psdp_comm_h c) {
      return psdp_all_gather_v(b.send.data(), b.recv.data(), counts.data(), PSDP_INT32, c, nullptr, nullptr);
    };
  };
  const auto n = static_cast<size_t>(nranks);
  // Ranks 0 and 1 trade one element: the same total, other counts.
  std::vector<size_t> oddCounts(n, 10);
  oddCounts[0] = 11;
  oddCounts[1] = 9;
  const std::string agv = "all-gather-v #1 (total count " + std::to_string(10 * n) + ", int32, per-rank counts";
  const std::string ar = "all-reduce #1 (count 1000, int32, sum)";
  return {
      {"another collective", reduce(kCount, PSDP_INT32, PSDP_SUM),
       [&b](psdp_comm_h c) {
         return psdp_all_gather(b.send.data(), b.recv.data(), kCount, PSDP_INT32, c, nullptr, nullptr);
       },
       ar, "all-gather #1 (count 1000, int32)"},
      {"another count", reduce(kCount, PSDP_INT32, PSDP_SUM), reduce(kCount - 1, PSDP_INT32, PSDP_SUM), ar,
       "all-reduce #1 (count 999, int32, sum)"},
      {"count 0", reduce(kCount, PSDP_INT32, PSDP_SUM), reduce(0, PSDP_INT32, PSDP_SUM), ar,
       "all-reduce #1 (count 0, int32, sum)"},
      {"another dtype of the same size", reduce(kCount, PSDP_INT32, PSDP_SUM), reduce(kCount, PSDP_FLOAT32, PSDP_SUM),
       ar, "all-reduce #1 (count 1000, float32, sum)"},
      {"another op", reduce(kCount, PSDP_INT32, PSDP_SUM), reduce(kCount, PSDP_INT32, PSDP_MAX), ar,
       "all-reduce #1 (count 1000, int32, max)"},
      {"another root", bcast(0), bcast(nranks - 1), "broadcast #1 (count 1000, int32, root 0)",
       "broadcast #1 (count 1000, int32, root " + std::to_string(nranks - 1) + ")"},
      {"a skipped call", reduce(kCount, PSDP_INT32, PSDP_SUM), [](psdp_comm_h c) { return psdp_barrier(c, nullptr); },
       ar, "barrier #1"},
      {"other per-rank counts of the same total", allGatherV(b, std::vector<size_t>(n, 10)), allGatherV(b, oddCounts),
       agv, agv},
      {"another root of a gather", gather(0), gather(nranks - 1), "gather #1 (count 1000, int32, root 0)",
       "gather #1 (count 1000, int32, root " + std::to_string(nranks - 1) + ")"},
      {"a reduce for an all-reduce", reduce(kCount, PSDP_INT32, PSDP_SUM),
       [&b](psdp_comm_h c) {
         return psdp_reduce(b.send.data(), b.recv.data(), kCount, PSDP_INT32, PSDP_SUM, 0, c, nullptr, nullptr);
       },
       ar, "reduce #1 (count 1000, int32, sum, root 0)"},
      {"nonblocking", [&b](psdp_comm_h c) { return waitPosted(c, b, PSDP_INT32); },
       [&b](psdp_comm_h c) { return waitPosted(c, b, PSDP_UINT32); }, ar, "all-reduce #1 (count 1000, uint32, sum)"},
  };
}

bool contains(const std::string& text, const std::string& words) {
  return text.find(words) != std::string::npos;
}

}  // namespace

int main() {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h parent = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (parent == nullptr) return 1;
  Buffers buffers{std::vector<int32_t>(kCount * static_cast<size_t>(nranks), rank + 1),
                  std::vector<int32_t>(kCount * static_cast<size_t>(nranks), 0)};
  const bool odd = rank == nranks - 1;
  double worst = 0;
  for (const Scenario& scenario : scenarios(buffers, nranks)) {
    const std::string name = scenario.name;
    psdp_comm_h child = nullptr;
    psdp_status_t s = psdp_comm_split(parent, 0, rank, nullptr, &child);
    report.check(s == PSDP_SUCCESS, name + ": split: " + why(parent, s));
    if (s != PSDP_SUCCESS) break;
    // Operation #0 agrees everywhere; #1 is the mismatch.
    s = allReduce(child, buffers, kCount, PSDP_INT32, PSDP_SUM);
    report.check(s == PSDP_SUCCESS, name + ": warm-up all-reduce: " + why(child, s));
    // Fail-stop fails whatever is still running: no rank starts #1 before every rank has returned from #0.
    s = psdp_barrier(parent, nullptr);
    report.check(s == PSDP_SUCCESS, name + ": parent barrier: " + why(parent, s));
    Clock::time_point start = Clock::now();
    s = odd ? scenario.odd(child) : scenario.agreed(child);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    worst = std::max(worst, seconds);
    std::string error = psdp_get_last_error(child);
    report.check(s == PSDP_ERR_MISMATCH, name + ": the call fails with mismatch: " + why(child, s));
    report.check(
        contains(error, scenario.agreed_words) && contains(error, scenario.odd_words),
        name + ": the error names both calls (" + scenario.agreed_words + "; " + scenario.odd_words + "): " + error);
    report.check(seconds < kMaxSecondsToError, name + ": it failed after " + std::to_string(seconds) + " s");
    s = psdp_barrier(child, nullptr);
    report.check(s == PSDP_ERR_MISMATCH, name + ": later calls fail with the same status: " + why(child, s));
    report.check(psdp_comm_destroy(child) == PSDP_SUCCESS, name + ": destroy");
    s = psdp_barrier(parent, nullptr);
    report.check(s == PSDP_SUCCESS, name + ": the parent is unaffected: " + why(parent, s));
    if (rank == 0) std::printf("%s: %.3f s: %s\n", name.c_str(), seconds, error.c_str());
  }
  // Settings that decide the messages must match too: the last rank asks for a child without the call
  // check, then with another fragment size, ... (through its config, or, for a setting the config struct
  // does not carry, its environment while it splits). Every rank's split fails naming the setting and both
  // ranks.
  struct SettingCase {
    const char* variable;
    void (*odd_config)(psdp_config_t*);
    const char* odd_env_value;  // set in the last rank's environment during its split
  };
  const SettingCase settings[] = {
      {"PSDP_CHECK", [](psdp_config_t* c) { c->check = PSDP_CHECK_OFF; }, nullptr},
      {"PSDP_FRAGMENT_BYTES", [](psdp_config_t* c) { c->fragment_bytes = 4096; }, nullptr},
      {"PSDP_ALGORITHMS", [](psdp_config_t* c) { c->algorithms = "all-reduce:0-=ring"; }, nullptr},
      {"PSDP_HOST_COLLECTIVES", [](psdp_config_t*) {}, "host-ring"},
  };
  for (const SettingCase& setting : settings) {
    const std::string name = std::string("settings: ") + setting.variable;
    psdp_config_t config = PSDP_CONFIG_INITIALIZER;
    if (odd) setting.odd_config(&config);
    if (odd && setting.odd_env_value != nullptr) setenv(setting.variable, setting.odd_env_value, 1);
    psdp_comm_h child = nullptr;
    psdp_status_t s = psdp_comm_split(parent, 0, rank, &config, &child);
    if (odd && setting.odd_env_value != nullptr) unsetenv(setting.variable);
    std::string error = psdp_get_last_error(parent);
    report.check(s == PSDP_ERR_MISMATCH, name + ": the split fails with mismatch: " + why(parent, s));
    report.check(child == nullptr, name + ": no child is returned");
    const std::string odd_rank = "rank " + std::to_string(nranks - 1);
    report.check(contains(error, setting.variable) && contains(error, "rank 0") && contains(error, odd_rank),
                 name + ": the error names the setting, rank 0 and " + odd_rank + ": " + error);
    if (child != nullptr) psdp_comm_destroy(child);
    s = psdp_barrier(parent, nullptr);
    report.check(s == PSDP_SUCCESS, name + ": the parent is unaffected: " + why(parent, s));
    if (rank == 0) std::printf("%s: %s\n", name.c_str(), error.c_str());
  }
  std::printf("rank %d: worst time to the mismatch error %.3f s\n", rank, worst);
  report.check(psdp_comm_finalize(parent) == PSDP_SUCCESS, "parent finalize");
  report.check(psdp_comm_destroy(parent) == PSDP_SUCCESS, "parent destroy");
  return report.finish();
}
