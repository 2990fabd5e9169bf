/* The topology API from C: every call on an hwloc file and an NCCL file (devices, path classes, the mapping of
 * ranks onto hosts), the live machine or PSDP_TOPO_FILE through a NULL path, and every bad argument answered
 * with invalid argument (or invalid usage for a freed handle) and a message naming it.
 * PSDP_TOPOLOGY_DIR is tests/data/topologies; the program runs three times (CMakeLists.txt): without
 * PSDP_TOPO_FILE, with it naming an NCCL file, and with it naming a missing file. */
#define _POSIX_C_SOURCE 200809L /* getpid */
#include <psdp/psdp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c_checks.h"

#define HWLOC_FILE PSDP_TOPOLOGY_DIR "/hwloc/hwloc-32em64t-2n8c2t-pci-wholeio.xml"
#define NCCL_FILE PSDP_TOPOLOGY_DIR "/nccl/azure-ndv4-topo.xml"
#define GRAPH_FILE PSDP_TOPOLOGY_DIR "/nccl/azure-ncv4-graph.xml"
#define MAX_RANKS 16

static psdp_topology_h load(const char* path) {
  psdp_topology_h topo = NULL;
  CHECK(psdp_topology_load(path, &topo) == PSDP_SUCCESS && topo != NULL);
  if (topo == NULL) fprintf(stderr, "  psdp_topology_load(%s): %s\n", path, psdp_get_last_error(NULL));
  return topo;
}

/* The index of the device of `kind` named `name`, or -1. */
static int find_device(psdp_topology_h topo, psdp_device_kind_t kind, const char* name) {
  int n = 0, i;
  psdp_device_info_t info;
  CHECK(psdp_topology_device_count(topo, kind, &n) == PSDP_SUCCESS);
  for (i = 0; i < n; ++i) {
    CHECK(psdp_topology_get_device(topo, kind, i, &info) == PSDP_SUCCESS);
    if (strcmp(info.name, name) == 0 || strcmp(info.bus_id, name) == 0) return i;
  }
  return -1;
}

/* The layouts callers compile against (an ABI change must show up here). */
static void test_abi(void) {
  CHECK(sizeof(psdp_path_class_t) == 4 && sizeof(psdp_device_kind_t) == 4);
  CHECK(offsetof(psdp_device_info_t, numa_node) == 16 && offsetof(psdp_device_info_t, speed_mbps) == 24);
  CHECK(sizeof(psdp_device_info_t) == 32);
  CHECK(offsetof(psdp_topology_summary_t, packages) == 16 && sizeof(psdp_topology_summary_t) == 40);
  CHECK(offsetof(psdp_rank_placement_t, gpu_bus_id) == 16 && offsetof(psdp_rank_placement_t, nic) == 32);
  CHECK(offsetof(psdp_rank_placement_t, nic_path) == 96 && sizeof(psdp_rank_placement_t) == 100);
}

static void test_path_class_string(void) {
  CHECK(strcmp(psdp_path_class_string(PSDP_PATH_LOC), "LOC") == 0);
  CHECK(strcmp(psdp_path_class_string(PSDP_PATH_NVL), "NVL") == 0);
  CHECK(strcmp(psdp_path_class_string(PSDP_PATH_PIX), "PIX") == 0);
  CHECK(strcmp(psdp_path_class_string(PSDP_PATH_PXB), "PXB") == 0);
  CHECK(strcmp(psdp_path_class_string(PSDP_PATH_PHB), "PHB") == 0);
  CHECK(strcmp(psdp_path_class_string(PSDP_PATH_NODE), "NODE") == 0);
  CHECK(strcmp(psdp_path_class_string(PSDP_PATH_SYS), "SYS") == 0);
  CHECK(strcmp(psdp_path_class_string((psdp_path_class_t)7), "unknown") == 0);
  CHECK(strcmp(psdp_path_class_string(PSDP_PATH_CLASS_MAX_ENUM), "unknown") == 0);
}

/* Every device's path to itself is LOC and every path is symmetric and a known class. */
static void check_paths(psdp_topology_h topo) {
  int counts[2] = {0, 0}, ka, kb, a, b;
  psdp_path_class_t ab, ba;
  CHECK(psdp_topology_device_count(topo, PSDP_DEVICE_GPU, &counts[0]) == PSDP_SUCCESS);
  CHECK(psdp_topology_device_count(topo, PSDP_DEVICE_NIC, &counts[1]) == PSDP_SUCCESS);
  for (ka = 0; ka < 2; ++ka)
    for (kb = 0; kb < 2; ++kb)
      for (a = 0; a < counts[ka]; ++a)
        for (b = 0; b < counts[kb]; ++b) {
          CHECK(psdp_topology_path(topo, (psdp_device_kind_t)ka, a, (psdp_device_kind_t)kb, b, &ab) == PSDP_SUCCESS);
          CHECK(psdp_topology_path(topo, (psdp_device_kind_t)kb, b, (psdp_device_kind_t)ka, a, &ba) == PSDP_SUCCESS);
          CHECK(ab == ba && ab >= PSDP_PATH_LOC && ab <= PSDP_PATH_SYS);
          CHECK((ab == PSDP_PATH_LOC) == (ka == kb && a == b));
        }
}

/* rank_layout is a permutation; every shard group of G lies inside one host when G divides the ranks per
 * host; placements agree with the documented rank-to-host rule. */
static void check_mapping(psdp_topology_h topo, int hosts, int per_host, int group, int with_gpus) {
  int layout[MAX_RANKS], seen[MAX_RANKS], world = hosts * per_host, i, k;
  psdp_rank_placement_t placements[MAX_RANKS];
  memset(seen, 0, sizeof(seen));
  CHECK(world <= MAX_RANKS);
  if (world > MAX_RANKS) return;
  CHECK(psdp_topology_map(topo, hosts, per_host, group, layout, placements) == PSDP_SUCCESS);
  for (i = 0; i < world; ++i) {
    CHECK(layout[i] >= 0 && layout[i] < world);
    if (layout[i] >= 0 && layout[i] < world) seen[layout[i]]++;
    CHECK(placements[i].host == i / per_host);
    CHECK(placements[i].local_index >= 0 && placements[i].local_index < per_host);
    CHECK(placements[i].ring_position >= 0 && placements[i].ring_position < world);
    CHECK((placements[i].gpu_bus_id[0] != '\0') == with_gpus);
  }
  for (i = 0; i < world; ++i) CHECK(seen[i] == 1);
  if (per_host % group == 0) {
    for (k = 0; k < world / group; ++k)
      for (i = 1; i < group; ++i) CHECK(placements[layout[k * group + i]].host == placements[layout[k * group]].host);
  }
  /* placements may be NULL: the same layout. */
  for (i = 0; i < world; ++i) seen[i] = layout[i];
  CHECK(psdp_topology_map(topo, hosts, per_host, group, layout, NULL) == PSDP_SUCCESS);
  CHECK(memcmp(seen, layout, sizeof(int) * world) == 0);
}

static void test_hwloc_file(void) {
  psdp_topology_h topo = load(HWLOC_FILE);
  psdp_topology_summary_t s;
  psdp_device_info_t info;
  psdp_path_class_t path = PSDP_PATH_SYS;
  int cuda0, mlx5, gpus = 0;
  if (topo == NULL) return;
  CHECK(psdp_topology_get_summary(topo, &s) == PSDP_SUCCESS);
  CHECK(strcmp(s.format, "hwloc-xml") == 0 && strstr(s.origin, "wholeio") != NULL);
  CHECK(s.packages == 2 && s.numa_nodes == 2 && s.cores == 16 && s.gpus >= 1 && s.nics >= 2);
  CHECK(psdp_topology_device_count(topo, PSDP_DEVICE_GPU, &gpus) == PSDP_SUCCESS && gpus == s.gpus);
  cuda0 = find_device(topo, PSDP_DEVICE_GPU, "cuda0");
  mlx5 = find_device(topo, PSDP_DEVICE_NIC, "mlx5_0");
  CHECK(cuda0 >= 0 && mlx5 >= 0);
  if (cuda0 < 0 || mlx5 < 0) goto done;
  CHECK(psdp_topology_get_device(topo, PSDP_DEVICE_NIC, mlx5, &info) == PSDP_SUCCESS);
  CHECK(info.fabric == 1 && strlen(info.bus_id) == 12 && info.numa_node >= 0);
  CHECK(psdp_topology_get_device(topo, PSDP_DEVICE_GPU, cuda0, &info) == PSDP_SUCCESS);
  CHECK(info.fabric == 0 && info.speed_mbps == 0 && strlen(info.bus_id) == 12);
  CHECK(psdp_topology_path(topo, PSDP_DEVICE_GPU, cuda0, PSDP_DEVICE_NIC, mlx5, &path) == PSDP_SUCCESS);
  CHECK(path == PSDP_PATH_PIX);
  check_paths(topo);
  check_mapping(topo, 1, gpus, gpus, 1);
  check_mapping(topo, 2, gpus + 1, gpus + 1, 0); /* more ranks than GPUs: CPU-only */
done:
  CHECK(psdp_topology_free(topo) == PSDP_SUCCESS);
}

static void test_nccl_file(void) {
  psdp_topology_h topo = load(NCCL_FILE);
  psdp_topology_summary_t s;
  psdp_device_info_t info;
  psdp_rank_placement_t placements[MAX_RANKS];
  int layout[MAX_RANKS], n = 0, i;
  if (topo == NULL) return;
  CHECK(psdp_topology_get_summary(topo, &s) == PSDP_SUCCESS);
  CHECK(strcmp(s.format, "nccl-xml") == 0 && strstr(s.origin, "azure-ndv4-topo.xml") != NULL);
  CHECK(s.gpus == 8 && s.nics == 8 && s.numa_nodes == 4);
  CHECK(psdp_topology_device_count(topo, PSDP_DEVICE_NIC, &n) == PSDP_SUCCESS && n == 8);
  for (i = 0; i < n; ++i) {
    CHECK(psdp_topology_get_device(topo, PSDP_DEVICE_NIC, i, &info) == PSDP_SUCCESS);
    CHECK(info.fabric == 1 && strlen(info.bus_id) == 12 && info.numa_node >= 0);
  }
  check_paths(topo);
  check_mapping(topo, 1, 8, 8, 1);
  check_mapping(topo, 2, 8, 8, 1);
  check_mapping(topo, 2, 8, 4, 1);
  check_mapping(topo, 2, 8, 16, 1);
  /* Each rank of a host has its own GPU and, with a NIC per GPU, its own NIC behind the same switch. */
  CHECK(psdp_topology_map(topo, 2, 8, 8, layout, placements) == PSDP_SUCCESS);
  for (i = 0; i < 8; ++i) {
    CHECK(placements[i].nic[0] != '\0' && placements[i].nic_path == PSDP_PATH_PIX);
    CHECK(strcmp(placements[i].gpu_bus_id, placements[(i + 1) % 8].gpu_bus_id) != 0);
    CHECK(strcmp(placements[i].nic, placements[(i + 1) % 8].nic) != 0);
    CHECK(strcmp(placements[i].gpu_bus_id, placements[i + 8].gpu_bus_id) == 0);
  }
  CHECK(psdp_topology_free(topo) == PSDP_SUCCESS);
}

/* load(NULL): PSDP_TOPO_FILE when set (this program runs once with it naming NCCL_FILE and once naming a
 * missing file), else the live machine, which may have no GPU and no NIC at all. */
static void test_default(void) {
  const char* file = getenv("PSDP_TOPO_FILE");
  FILE* readable = file != NULL && *file != '\0' ? fopen(file, "r") : NULL;
  psdp_topology_h topo = NULL;
  psdp_topology_summary_t s;
  int layout[MAX_RANKS];
  if (file != NULL && *file != '\0' && readable == NULL) {
    CHECK_ERROR(psdp_topology_load(NULL, &topo), PSDP_ERR_SYSTEM, NULL, "PSDP_TOPO_FILE");
    CHECK(strstr(psdp_get_last_error(NULL), file) != NULL && topo == NULL);
    return;
  }
  if (readable != NULL) fclose(readable);
  topo = load(NULL);
  if (topo == NULL) return;
  CHECK(psdp_topology_get_summary(topo, &s) == PSDP_SUCCESS);
  if (file != NULL && *file != '\0') {
    CHECK(strcmp(s.format, "nccl-xml") == 0 && strcmp(s.origin, file) == 0);
  } else {
    CHECK(strcmp(s.format, "live") == 0 && s.numa_nodes >= 1 && s.cores >= 1 && s.packages >= 1);
  }
  check_paths(topo);
  CHECK(psdp_topology_map(topo, 2, 1, 1, layout, NULL) == PSDP_SUCCESS);
  CHECK(psdp_topology_free(topo) == PSDP_SUCCESS);
}

static void test_bad_load(void) {
  psdp_topology_h topo = NULL;
  /* Named per process: this program runs as several tests at once in one directory. */
  char malformed[64];
  snprintf(malformed, sizeof(malformed), "malformed-topology-%ld.xml", (long)getpid());
  FILE* f = fopen(malformed, "w");
  CHECK_ERROR(psdp_topology_load(HWLOC_FILE, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "topo_p");
  CHECK_ERROR(psdp_topology_load("", &topo), PSDP_ERR_INVALID_ARGUMENT, NULL, "path");
  CHECK_ERROR(psdp_topology_load(PSDP_TOPOLOGY_DIR "/missing.xml", &topo), PSDP_ERR_SYSTEM, NULL, "missing.xml");
  CHECK_ERROR(psdp_topology_load(GRAPH_FILE, &topo), PSDP_ERR_INVALID_ARGUMENT, NULL, "graph");
  CHECK(strstr(psdp_get_last_error(NULL), "azure-ncv4-graph.xml") != NULL);
  CHECK(f != NULL);
  if (f != NULL) {
    fputs("<?xml version=\"1.0\"?>\n<system version=\"1\">\n  <cpu numaid=\"0\"\n", f);
    fclose(f);
    CHECK_ERROR(psdp_topology_load(malformed, &topo), PSDP_ERR_INVALID_ARGUMENT, NULL, malformed);
    remove(malformed);
  }
  CHECK(topo == NULL);
}

static void test_bad_arguments(void) {
  psdp_topology_h topo = load(NCCL_FILE), freed = load(HWLOC_FILE);
  psdp_topology_summary_t s;
  psdp_device_info_t info;
  psdp_path_class_t path = PSDP_PATH_LOC;
  int count = -7, layout[MAX_RANKS];
  psdp_device_kind_t bad_kind = (psdp_device_kind_t)2;
  if (topo == NULL || freed == NULL) return;
  CHECK(psdp_topology_free(freed) == PSDP_SUCCESS);

  CHECK_ERROR(psdp_topology_free(NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "topo");
  CHECK_ERROR(psdp_topology_free(freed), PSDP_ERR_INVALID_USAGE, NULL, "live topology");
  CHECK_ERROR(psdp_topology_get_summary(NULL, &s), PSDP_ERR_INVALID_ARGUMENT, NULL, "topo");
  CHECK_ERROR(psdp_topology_get_summary(freed, &s), PSDP_ERR_INVALID_USAGE, NULL, "live topology");
  CHECK_ERROR(psdp_topology_get_summary(topo, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "summary_p");

  CHECK_ERROR(psdp_topology_device_count(NULL, PSDP_DEVICE_GPU, &count), PSDP_ERR_INVALID_ARGUMENT, NULL, "topo");
  CHECK_ERROR(psdp_topology_device_count(freed, PSDP_DEVICE_GPU, &count), PSDP_ERR_INVALID_USAGE, NULL, "topo");
  CHECK_ERROR(psdp_topology_device_count(topo, bad_kind, &count), PSDP_ERR_INVALID_ARGUMENT, NULL, "kind");
  CHECK_ERROR(psdp_topology_device_count(topo, PSDP_DEVICE_KIND_MAX_ENUM, &count), PSDP_ERR_INVALID_ARGUMENT, NULL,
              "kind");
  CHECK_ERROR(psdp_topology_device_count(topo, PSDP_DEVICE_NIC, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "count_p");
  CHECK(count == -7); /* outputs are written only on success */

  CHECK_ERROR(psdp_topology_get_device(NULL, PSDP_DEVICE_GPU, 0, &info), PSDP_ERR_INVALID_ARGUMENT, NULL, "topo");
  CHECK_ERROR(psdp_topology_get_device(freed, PSDP_DEVICE_GPU, 0, &info), PSDP_ERR_INVALID_USAGE, NULL, "topo");
  CHECK_ERROR(psdp_topology_get_device(topo, bad_kind, 0, &info), PSDP_ERR_INVALID_ARGUMENT, NULL, "kind");
  CHECK_ERROR(psdp_topology_get_device(topo, PSDP_DEVICE_GPU, -1, &info), PSDP_ERR_INVALID_ARGUMENT, NULL, "index");
  CHECK_ERROR(psdp_topology_get_device(topo, PSDP_DEVICE_GPU, 8, &info), PSDP_ERR_INVALID_ARGUMENT, NULL, "index");
  CHECK_ERROR(psdp_topology_get_device(topo, PSDP_DEVICE_NIC, 8, &info), PSDP_ERR_INVALID_ARGUMENT, NULL, "index");
  CHECK_ERROR(psdp_topology_get_device(topo, PSDP_DEVICE_GPU, 0, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "info_p");

  CHECK_ERROR(psdp_topology_path(NULL, PSDP_DEVICE_GPU, 0, PSDP_DEVICE_GPU, 1, &path), PSDP_ERR_INVALID_ARGUMENT, NULL,
              "topo");
  CHECK_ERROR(psdp_topology_path(freed, PSDP_DEVICE_GPU, 0, PSDP_DEVICE_GPU, 1, &path), PSDP_ERR_INVALID_USAGE, NULL,
              "topo");
  CHECK_ERROR(psdp_topology_path(topo, bad_kind, 0, PSDP_DEVICE_GPU, 1, &path), PSDP_ERR_INVALID_ARGUMENT, NULL,
              "kind_a");
  CHECK_ERROR(psdp_topology_path(topo, PSDP_DEVICE_GPU, 0, bad_kind, 1, &path), PSDP_ERR_INVALID_ARGUMENT, NULL,
              "kind_b");
  CHECK_ERROR(psdp_topology_path(topo, PSDP_DEVICE_GPU, 8, PSDP_DEVICE_GPU, 1, &path), PSDP_ERR_INVALID_ARGUMENT, NULL,
              "a 8");
  CHECK_ERROR(psdp_topology_path(topo, PSDP_DEVICE_GPU, 0, PSDP_DEVICE_NIC, -1, &path), PSDP_ERR_INVALID_ARGUMENT, NULL,
              "b -1");
  CHECK_ERROR(psdp_topology_path(topo, PSDP_DEVICE_GPU, 0, PSDP_DEVICE_GPU, 1, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL,
              "path_p");
  CHECK(path == PSDP_PATH_LOC);

  CHECK_ERROR(psdp_topology_map(NULL, 1, 8, 8, layout, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "topo");
  CHECK_ERROR(psdp_topology_map(freed, 1, 8, 8, layout, NULL), PSDP_ERR_INVALID_USAGE, NULL, "topo");
  CHECK_ERROR(psdp_topology_map(topo, 1, 8, 8, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "rank_layout");
  CHECK_ERROR(psdp_topology_map(topo, 0, 8, 8, layout, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "hosts");
  CHECK_ERROR(psdp_topology_map(topo, -3, 8, 8, layout, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "hosts");
  CHECK_ERROR(psdp_topology_map(topo, 1, 0, 8, layout, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "ranks_per_host");
  CHECK_ERROR(psdp_topology_map(topo, 65536, 65536, 1, layout, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "overflow");
  CHECK_ERROR(psdp_topology_map(topo, 2, 8, 3, layout, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "group_size");
  CHECK_ERROR(psdp_topology_map(topo, 2, 8, 0, layout, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "group_size");
  CHECK_ERROR(psdp_topology_map(topo, 2, 8, -8, layout, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "group_size");
  CHECK(psdp_topology_free(topo) == PSDP_SUCCESS);
}

int main(void) {
  test_abi();
  test_path_class_string();
  test_hwloc_file();
  test_nccl_file();
  test_default();
  test_bad_load();
  test_bad_arguments();
  return finish_checks();
}
