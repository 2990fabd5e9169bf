// The mapper inside real communicators: every rank reports where it runs at the rendezvous, and every rank
// gets the same mapping and the same rank layouts from psdp_comm_get_layout / psdp_comm_get_placement.
// Cases, each a fresh communicator made through a unique id broadcast over the launcher's one:
//   this machine as it is (no GPU, one NUMA node): one host, ring in rank order, contiguous layouts;
//   ranks reporting interleaved hosts (PSDP_HOST_ID, here the config field): shard groups stay inside hosts;
//     psdp_state_register plans with that layout; a split per host sees one host;
//   GPUs of an NCCL topology file (Azure NDv4) given in scrambled order: ring and groups follow the PCIe
//     switches, each GPU gets its own NIC on its switch (PIX), NUMA nodes this machine lacks are not bound;
//   two ranks naming one host but reporting different machines: mismatch on every rank, naming both;
//   one rank naming a GPU its topology lacks: invalid argument there naming the GPU, invalid argument
//     naming that rank everywhere else, at once;
//   bad arguments to the queries.
// argv[1]: the NDv4 topology file.
#include <psdp/psdp.h>

#include <cstring>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

struct Job {
  psdp_comm_h world = nullptr;
  int rank = 0;
  int nranks = 1;
};

// A new communicator over the same ranks with `config`; every rank gets the unique id from rank 0.
psdp_status_t initWith(const Job& job, const psdp_config_t& config, psdp_comm_h* comm, psdp::mp::Report& report) {
  psdp_unique_id_t id{};
  if (job.rank == 0) report.check(psdp_get_unique_id(&id) == PSDP_SUCCESS, "psdp_get_unique_id");
  psdp_status_t s = psdp_broadcast(&id, &id, sizeof(id), PSDP_UINT8, 0, job.world, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS, "broadcast of the unique id: " + why(job.world, s));
  *comm = nullptr;
  return psdp_comm_init(job.nranks, &id, job.rank, &config, comm);
}

std::vector<int> layoutOf(psdp_comm_h comm, int nranks, int group_size, psdp::mp::Report& report) {
  std::vector<int> layout(static_cast<size_t>(nranks), -1);
  psdp_status_t s = psdp_comm_get_layout(comm, group_size, layout.data());
  report.check(s == PSDP_SUCCESS, "psdp_comm_get_layout(G=" + std::to_string(group_size) + "): " + why(comm, s));
  return layout;
}

psdp_rank_placement_t placementOf(psdp_comm_h comm, int rank, psdp::mp::Report& report) {
  psdp_rank_placement_t p{};
  psdp_status_t s = psdp_comm_get_placement(comm, rank, &p);
  report.check(s == PSDP_SUCCESS, "psdp_comm_get_placement(" + std::to_string(rank) + "): " + why(comm, s));
  return p;
}

std::string text(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return "[" + out + "]";
}

// Every rank computed the same layout: all-gather rank 0's view and compare.
void sameEverywhere(const Job& job, const std::vector<int>& layout, const std::string& what, psdp::mp::Report& report) {
  std::vector<int> all(layout.size() * static_cast<size_t>(job.nranks));
  psdp_status_t s = psdp_all_gather(layout.data(), all.data(), layout.size(), PSDP_INT32, job.world, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS, "all-gather of " + what + ": " + why(job.world, s));
  for (int r = 0; r < job.nranks; ++r) {
    std::vector<int> theirs(all.begin() + r * static_cast<long>(layout.size()),
                            all.begin() + (r + 1) * static_cast<long>(layout.size()));
    report.check(theirs == layout,
                 what + ": rank " + std::to_string(r) + " has " + text(theirs) + ", this rank " + text(layout));
  }
}

void destroy(psdp_comm_h comm, psdp::mp::Report& report) {
  report.check(psdp_comm_finalize(comm) == PSDP_SUCCESS, "finalize: " + why(comm, PSDP_SUCCESS));
  report.check(psdp_comm_destroy(comm) == PSDP_SUCCESS, "destroy");
}

// NUMA nodes of this machine as psdp discovers it (0 when discovery fails, which the check reports).
int liveNumaNodes(psdp::mp::Report& report) {
  psdp_topology_h topo = nullptr;
  psdp_status_t s = psdp_topology_load(nullptr, &topo);
  report.check(s == PSDP_SUCCESS, "live topology: " + why(nullptr, s));
  if (s != PSDP_SUCCESS) return 0;
  psdp_topology_summary_t summary{};
  s = psdp_topology_get_summary(topo, &summary);
  report.check(s == PSDP_SUCCESS, "topology summary: " + why(nullptr, s));
  psdp_topology_free(topo);
  return summary.numa_nodes;
}

void thisMachine(const Job& job, psdp::mp::Report& report) {
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  psdp_comm_h comm = nullptr;
  psdp_status_t s = initWith(job, config, &comm, report);
  report.check(s == PSDP_SUCCESS, "init on this machine: " + why(nullptr, s));
  if (s != PSDP_SUCCESS) return;
  std::vector<int> contiguous;
  for (int r = 0; r < job.nranks; ++r) contiguous.push_back(r);
  for (int g = 1; g <= job.nranks; ++g) {
    if (job.nranks % g != 0) continue;
    std::vector<int> layout = layoutOf(comm, job.nranks, g, report);
    report.check(layout == contiguous, "one CPU-only host, G=" + std::to_string(g) + ": layout " + text(layout));
  }
  for (int r = 0; r < job.nranks; ++r) {
    psdp_rank_placement_t p = placementOf(comm, r, report);
    report.check(p.host == 0 && p.local_index == r && p.ring_position == r,
                 "rank " + std::to_string(r) + " is host 0, local index and ring position " + std::to_string(r) +
                     ": got host " + std::to_string(p.host) + " local " + std::to_string(p.local_index) + " ring " +
                     std::to_string(p.ring_position));
    report.check(p.gpu_bus_id[0] == '\0', "no GPU on this machine");
  }
  // The caller's own NUMA node comes from its CPU binding. On a machine with one node that node is the only
  // answer; -1 (unknown) there means discovery failed and the rank lost its binding.
  psdp_rank_placement_t mine = placementOf(comm, job.rank, report);
  const int numa_nodes = liveNumaNodes(report);
  if (numa_nodes == 1) {
    report.check(mine.numa_node == 0, "NUMA node " + std::to_string(mine.numa_node) + " on a one-node machine");
  } else {
    report.check(mine.numa_node >= -1 && mine.numa_node < numa_nodes,
                 "NUMA node " + std::to_string(mine.numa_node) + " of " + std::to_string(numa_nodes));
  }
  destroy(comm, report);
}

// Rank r reports host "h<r % 2>": hosts h0 = {0, 2, ...}, h1 = {1, 3, ...}, in ring order h0 then h1.
void interleavedHosts(const Job& job, psdp::mp::Report& report) {
  if (job.nranks % 2 != 0) return;
  const std::string host = "h" + std::to_string(job.rank % 2);
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  config.host_id = host.c_str();
  psdp_comm_h comm = nullptr;
  psdp_status_t s = initWith(job, config, &comm, report);
  report.check(s == PSDP_SUCCESS, "init with interleaved hosts: " + why(nullptr, s));
  if (s != PSDP_SUCCESS) return;
  std::vector<int> ring;
  for (int r = 0; r < job.nranks; r += 2) ring.push_back(r);
  for (int r = 1; r < job.nranks; r += 2) ring.push_back(r);
  const int per_host = job.nranks / 2;
  for (int g : {1, per_host, job.nranks}) {
    std::vector<int> layout = layoutOf(comm, job.nranks, g, report);
    report.check(layout == ring,
                 "interleaved hosts, G=" + std::to_string(g) + ": layout " + text(layout) + ", expected " + text(ring));
    sameEverywhere(job, layout, "layout G=" + std::to_string(g), report);
  }
  psdp_rank_placement_t mine = placementOf(comm, job.rank, report);
  report.check(mine.host == job.rank % 2 && mine.local_index == job.rank / 2,
               "host " + std::to_string(mine.host) + " local index " + std::to_string(mine.local_index));

  // Registration plans with the mapper's layout: the plan equals psdp_plan_create's with that layout.
  std::vector<float> weights(4096), grads(4096);
  psdp_buffer_desc_t buffers[] = {
      {"w", weights.data(), weights.size(), PSDP_FLOAT32, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0},
      {"w.grad", grads.data(), grads.size(), PSDP_FLOAT32, PSDP_BUFFER_GRADIENT, PSDP_MEMORY_HOST, 0},
  };
  psdp_plan_config_t plan_config = PSDP_PLAN_CONFIG_INITIALIZER;
  plan_config.group_size = per_host;
  psdp_state_h state = nullptr;
  s = psdp_state_register(comm, buffers, 2, &plan_config, &state);
  report.check(s == PSDP_SUCCESS, "psdp_state_register: " + why(comm, s));
  if (s == PSDP_SUCCESS) {
    std::vector<int> layout = layoutOf(comm, job.nranks, per_host, report);
    psdp_plan_h registered = nullptr, expected = nullptr;
    uint64_t got = 0, want = 1;
    psdp_state_get_plan(state, &registered);
    psdp_plan_create(buffers, 2, job.nranks, layout.data(), &plan_config, &expected);
    psdp_plan_hash(registered, &got);
    psdp_plan_hash(expected, &want);
    report.check(registered != nullptr && expected != nullptr && got == want,
                 "the registered plan is the plan of the mapper's layout");
    psdp_plan_free(registered);
    psdp_plan_free(expected);
    psdp_state_deregister(state);
  }

  // A communicator split by host holds one host, its ranks in the parent's ring order.
  psdp_comm_h per_host_comm = nullptr;
  s = psdp_comm_split(comm, job.rank % 2, job.rank, nullptr, &per_host_comm);
  report.check(s == PSDP_SUCCESS, "split per host: " + why(comm, s));
  if (s == PSDP_SUCCESS) {
    for (int r = 0; r < per_host; ++r) {
      psdp_rank_placement_t p = placementOf(per_host_comm, r, report);
      report.check(p.host == 0 && p.ring_position == r, "split: rank " + std::to_string(r) + " on its only host");
    }
    destroy(per_host_comm, report);
  }
  destroy(comm, report);
}

// Four GPUs of Azure NDv4 (ffff:ff:01.0 switches GPUs 0003 and 0004, ffff:ff:02.0 switches 0001 and 0002),
// handed out so that ring neighbours by rank would cross switches.
void gpusOfAFile(const Job& job, const std::string& ndv4, psdp::mp::Report& report) {
  if (job.nranks != 4) return;
  const char* gpus[] = {"0004:00:00.0", "0001:00:00.0", "0003:00:00.0", "0002:00:00.0"};
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  config.topo_file = ndv4.c_str();
  config.host_id = "ndv4";
  config.gpu_bus_id = gpus[job.rank];
  psdp_comm_h comm = nullptr;
  psdp_status_t s = initWith(job, config, &comm, report);
  report.check(s == PSDP_SUCCESS, "init with NDv4 GPUs: " + why(nullptr, s));
  if (s != PSDP_SUCCESS) return;
  const std::vector<int> by_switch = {2, 0, 1, 3};  // bus id order within a switch
  std::vector<int> layout = layoutOf(comm, 4, 2, report);
  report.check(layout == by_switch, "NDv4 G=2: layout " + text(layout) + ", expected " + text(by_switch));
  std::vector<std::string> nics;
  for (int r = 0; r < 4; ++r) {
    psdp_rank_placement_t p = placementOf(comm, r, report);
    report.check(std::strcmp(p.gpu_bus_id, gpus[r]) == 0, "rank " + std::to_string(r) + " GPU " + p.gpu_bus_id);
    report.check(
        p.nic[0] != '\0' && p.nic_path == PSDP_PATH_PIX,
        "rank " + std::to_string(r) + " has a NIC on its switch: " + p.nic + " " + psdp_path_class_string(p.nic_path));
    report.check(p.numa_node == (r % 2 == 0 ? 0 : 1),
                 "rank " + std::to_string(r) + " NUMA node " + std::to_string(p.numa_node));
    nics.push_back(p.nic);
  }
  report.check(nics[0] != nics[2] && nics[1] != nics[3], "GPUs of one switch use different NICs");
  // Collectives work, whatever could be bound.
  std::vector<int> data(1000, job.rank + 1);
  s = psdp_all_reduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS && data[999] == 10, "all-reduce on the NDv4-mapped communicator");
  destroy(comm, report);
}

void inconsistentHosts(const Job& job, const std::string& ndv4, psdp::mp::Report& report) {
  if (job.nranks < 2) return;
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  config.host_id = "same-name";
  if (job.rank == 0) config.topo_file = ndv4.c_str();
  psdp_comm_h comm = nullptr;
  psdp_status_t s = initWith(job, config, &comm, report);
  std::string error = psdp_get_last_error(nullptr);
  report.check(s == PSDP_ERR_MISMATCH, "one host name, two machines: " + why(nullptr, s));
  report.check(error.find("same-name") != std::string::npos && error.find("ranks 0 and 1") != std::string::npos &&
                   error.find("PSDP_HOST_ID") != std::string::npos,
               "the error names the host, ranks 0 and 1 and PSDP_HOST_ID: " + error);
  if (comm != nullptr) psdp_comm_destroy(comm);
}

void unknownGpu(const Job& job, const std::string& ndv4, psdp::mp::Report& report) {
  if (job.nranks < 2) return;
  const int last = job.nranks - 1;
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  config.topo_file = ndv4.c_str();
  if (job.rank == last) config.gpu_bus_id = "0fff:00:00.0";
  psdp_comm_h comm = nullptr;
  psdp_status_t s = initWith(job, config, &comm, report);
  std::string error = psdp_get_last_error(nullptr);
  report.check(s == PSDP_ERR_INVALID_ARGUMENT, "a GPU the topology lacks: " + why(nullptr, s));
  std::string expected = job.rank == last ? "GPU 0fff:00:00.0 is not in" : "rank " + std::to_string(last);
  report.check(error.find(expected) != std::string::npos, "the error names " + expected + ": " + error);
  if (comm != nullptr) psdp_comm_destroy(comm);
}

void badQueries(const Job& job, psdp::mp::Report& report) {
  std::vector<int> layout(static_cast<size_t>(job.nranks) + 1);
  psdp_rank_placement_t p{};
  struct Case {
    psdp_status_t status;
    const char* words;
  };
  auto expect = [&](psdp_status_t s, const Case& c) {
    std::string error = psdp_get_last_error(job.world);
    report.check(s == c.status && error.find(c.words) != std::string::npos,
                 std::string("bad query naming '") + c.words + "': " + why(job.world, s));
  };
  expect(psdp_comm_get_layout(job.world, 0, layout.data()), {PSDP_ERR_INVALID_ARGUMENT, "group_size 0"});
  expect(psdp_comm_get_layout(job.world, job.nranks + 1, layout.data()),
         {PSDP_ERR_INVALID_ARGUMENT, "does not divide"});
  expect(psdp_comm_get_layout(job.world, 1, nullptr), {PSDP_ERR_INVALID_ARGUMENT, "rank_layout"});
  expect(psdp_comm_get_placement(job.world, job.nranks, &p), {PSDP_ERR_INVALID_ARGUMENT, "rank"});
  expect(psdp_comm_get_placement(job.world, -1, &p), {PSDP_ERR_INVALID_ARGUMENT, "rank -1"});
  expect(psdp_comm_get_placement(job.world, 0, nullptr), {PSDP_ERR_INVALID_ARGUMENT, "placement_p"});
  report.check(psdp_comm_get_layout(nullptr, 1, layout.data()) == PSDP_ERR_INVALID_ARGUMENT, "NULL comm");
}

}  // namespace

int main(int argc, char** argv) {
  psdp::mp::Report report;
  Job job;
  job.world = psdp::mp::initFromEnv(report, &job.rank, &job.nranks);
  if (job.world == nullptr) return 1;
  if (argc < 2) {
    std::fprintf(stderr, "usage: mp_placement NDV4_TOPOLOGY_FILE\n");
    return 2;
  }
  const std::string ndv4 = argv[1];
  thisMachine(job, report);
  interleavedHosts(job, report);
  gpusOfAFile(job, ndv4, report);
  inconsistentHosts(job, ndv4, report);
  unknownGpu(job, ndv4, report);
  badQueries(job, report);
  destroy(job.world, report);
  return report.finish();
}
