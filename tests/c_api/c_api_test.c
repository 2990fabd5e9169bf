/* Compiles the public header as C99 and checks the C boundary from C: ABI layout, status strings, and
 * that bad arguments return the documented error with a message naming the argument, never a crash.
 * Bad arguments of the collectives, requests used after free, and every call on a finalized or destroyed
 * communicator are covered exhaustively by tests/unit/api/api_bad_input_test.cc (and, on several ranks,
 * tests/mp/mp_bad_input.cc); this file keeps what is particular to C and to the calls without a table. */
#include <psdp/psdp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "c_checks.h"

static void test_abi(void) {
  /* The public struct layouts are ABI: changing them breaks compiled users. */
  CHECK(sizeof(psdp_unique_id_t) == 128);
  CHECK(offsetof(psdp_config_t, size) == 0);
  CHECK(offsetof(psdp_config_t, magic) == 8);
  CHECK(offsetof(psdp_config_t, version) == 12);
  CHECK(offsetof(psdp_config_t, timeout_s) == 16);
  CHECK(offsetof(psdp_config_t, fragment_bytes) == 24);
  CHECK(offsetof(psdp_config_t, log_level) == 32);
  CHECK(offsetof(psdp_config_t, log_file) == 40);
  CHECK(offsetof(psdp_config_t, socket_ifname) == 48);
  CHECK(offsetof(psdp_config_t, port_range) == 56);
  CHECK(offsetof(psdp_config_t, progress_mode) == 64);
  CHECK(offsetof(psdp_config_t, algorithm) == 68);
  CHECK(offsetof(psdp_config_t, deterministic) == 72);
  CHECK(offsetof(psdp_config_t, topo_file) == 80);
  CHECK(offsetof(psdp_config_t, host_id) == 88);
  CHECK(offsetof(psdp_config_t, gpu_bus_id) == 96);
  CHECK(offsetof(psdp_config_t, max_in_flight) == 104);
  CHECK(offsetof(psdp_config_t, split_share) == 108);
  CHECK(offsetof(psdp_config_t, check) == 112);
  CHECK(offsetof(psdp_config_t, algorithms) == 120);
  CHECK(offsetof(psdp_config_t, tuning_file) == 128);
  CHECK(sizeof(psdp_config_t) == 136);
  CHECK(PSDP_SUCCESS == 0 && PSDP_IN_PROGRESS == 1 && PSDP_ERR_ABORTED == -9);
  /* The step's structs: the config grows at its end only. */
  CHECK(offsetof(psdp_step_config_t, stream) == 64);
  CHECK(offsetof(psdp_step_config_t, grad_norm) == 72 && offsetof(psdp_step_config_t, partial_sums) == 76);
  CHECK(offsetof(psdp_step_config_t, online_tuning) == 80 && offsetof(psdp_step_config_t, fragment_bytes) == 88);
  CHECK(sizeof(psdp_step_config_t) == 96);
  CHECK(offsetof(psdp_engine_tuning_t, window) == 8 && offsetof(psdp_engine_tuning_t, step_s) == 32);
  CHECK(offsetof(psdp_engine_tuning_t, fragment_bytes) == 48 && sizeof(psdp_engine_tuning_t) == 56);
  CHECK(offsetof(psdp_step_event_t, begin_ns) == 16 && offsetof(psdp_step_event_t, end_ns) == 24);
  CHECK(sizeof(psdp_step_event_t) == 32);
  CHECK(offsetof(psdp_grad_norm_t, nonfinite) == 8 && offsetof(psdp_grad_norm_t, step) == 16);
  CHECK(sizeof(psdp_grad_norm_t) == 24);
}

static void test_status_and_version(void) {
  int version = 0;
  CHECK(psdp_get_version(&version) == PSDP_SUCCESS);
  CHECK(version == PSDP_VERSION_CODE);
  CHECK(strcmp(psdp_status_string(PSDP_SUCCESS), "success") == 0);
  CHECK(strcmp(psdp_status_string(PSDP_ERR_MISMATCH), "mismatch") == 0);
  CHECK(strcmp(psdp_status_string((psdp_status_t)-77), "unknown status") == 0);
  CHECK_ERROR(psdp_get_version(NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "version_p");
}

static void test_params(void) {
  psdp_param_info_t info;
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  int n = psdp_param_count();
  int found_timeout = 0;
  CHECK(n >= 6);
  config.timeout_s = 12.5;
  for (int i = 0; i < n; ++i) {
    CHECK(psdp_param_get(&config, i, &info) == PSDP_SUCCESS);
    if (strcmp(info.env, "PSDP_TIMEOUT") == 0) {
      found_timeout = 1;
      CHECK(strcmp(info.value, "12.5") == 0);
      CHECK(strcmp(info.source, "config") == 0);
    }
  }
  CHECK(found_timeout);
  CHECK_ERROR(psdp_param_get(NULL, n, &info), PSDP_ERR_INVALID_ARGUMENT, NULL, "index");
  CHECK_ERROR(psdp_param_get(NULL, 0, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "info_p");
  config.magic = 0;
  CHECK_ERROR(psdp_param_get(&config, 0, &info), PSDP_ERR_INVALID_ARGUMENT, NULL, "PSDP_CONFIG_INITIALIZER");
}

static void test_init_arguments(void) {
  psdp_unique_id_t id;
  psdp_comm_h comm = NULL;
  memset(&id, 0x5a, sizeof(id));
  CHECK_ERROR(psdp_comm_init(0, &id, 0, NULL, &comm), PSDP_ERR_INVALID_ARGUMENT, NULL, "nranks");
  CHECK_ERROR(psdp_comm_init(2, &id, 2, NULL, &comm), PSDP_ERR_INVALID_ARGUMENT, NULL, "rank 2");
  CHECK_ERROR(psdp_comm_init(2, &id, -1, NULL, &comm), PSDP_ERR_INVALID_ARGUMENT, NULL, "rank -1");
  CHECK_ERROR(psdp_comm_init(2, NULL, 0, NULL, &comm), PSDP_ERR_INVALID_ARGUMENT, NULL, "id");
  CHECK_ERROR(psdp_comm_init(2, &id, 0, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "comm_p");
  CHECK_ERROR(psdp_comm_init(2, &id, 0, NULL, &comm), PSDP_ERR_INVALID_ARGUMENT, NULL, "unique id");
  CHECK(comm == NULL); /* outputs are written only on success */
  CHECK_ERROR(psdp_get_unique_id(NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "id_p");
  CHECK_ERROR(psdp_unique_id_from_string("psdp1:nonsense", &id), PSDP_ERR_INVALID_ARGUMENT, NULL, "");
  CHECK_ERROR(psdp_comm_init_from_env(NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "comm_p");
}

static void test_handle_arguments(void) {
  int value = 0;
  float buf[4] = {0};
  CHECK_ERROR(psdp_comm_rank(NULL, &value), PSDP_ERR_INVALID_ARGUMENT, NULL, "comm");
  CHECK_ERROR(psdp_comm_size(NULL, &value), PSDP_ERR_INVALID_ARGUMENT, NULL, "comm");
  CHECK_ERROR(psdp_comm_finalize(NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "comm");
  CHECK_ERROR(psdp_comm_destroy(NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "comm");
  CHECK_ERROR(psdp_comm_abort(NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "comm");
  CHECK_ERROR(psdp_all_reduce(buf, buf, 4, PSDP_FLOAT32, PSDP_SUM, NULL, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL,
              "comm");
  /* A pointer that was never a communicator is refused, not dereferenced. */
  CHECK_ERROR(psdp_comm_rank((psdp_comm_h)buf, &value), PSDP_ERR_INVALID_USAGE, NULL, "not a live communicator");
  CHECK_ERROR(psdp_broadcast(buf, buf, 4, PSDP_FLOAT32, 0, NULL, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "comm");
  CHECK_ERROR(psdp_barrier(NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "comm");
  CHECK_ERROR(psdp_request_test(NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "request");
  CHECK_ERROR(psdp_request_wait(NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "request");
  CHECK_ERROR(psdp_request_wait_timeout(NULL, 1.0), PSDP_ERR_INVALID_ARGUMENT, NULL, "request");
  CHECK_ERROR(psdp_request_free(NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "request");
  CHECK_ERROR(psdp_comm_after(NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "comm");
  {
    size_t len = 0;
    CHECK_ERROR(psdp_comm_interconnect(NULL, NULL, &len), PSDP_ERR_INVALID_ARGUMENT, NULL, "comm");
    CHECK_ERROR(psdp_algorithm_table_for(NULL, NULL, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "len");
    len = 4;
    CHECK_ERROR(psdp_algorithm_table_for(NULL, NULL, NULL, &len), PSDP_ERR_INVALID_ARGUMENT, NULL, "buf");
    len = 0;
    CHECK_ERROR(psdp_algorithm_table_for(NULL, "provider=ucx", NULL, &len), PSDP_ERR_INVALID_ARGUMENT, NULL,
                "lacks lanes=");
  }
  {
    size_t count = 0;
    psdp_grad_norm_t norm;
    psdp_engine_tuning_t tuning;
    CHECK_ERROR(psdp_state_step_events(NULL, NULL, 0, &count), PSDP_ERR_INVALID_ARGUMENT, NULL, "state");
    CHECK_ERROR(psdp_state_engine_tuning(NULL, &tuning), PSDP_ERR_INVALID_ARGUMENT, NULL, "state");
    CHECK_ERROR(psdp_step_grad_norm(NULL, 0.0, &norm), PSDP_ERR_INVALID_ARGUMENT, NULL, "step");
  }
  /* A pointer that was never a request is refused, not dereferenced. */
  CHECK_ERROR(psdp_request_test((psdp_request_h)buf), PSDP_ERR_INVALID_USAGE, NULL, "not a live request");
}

/* Requests on one rank: they complete at once, but the handle rules are the same as on many. */
static void test_one_rank_requests(psdp_comm_h comm) {
  float data[5] = {1, 2, 3, 4, 5};
  float out[5] = {0};
  psdp_request_h req = NULL;
  psdp_request_h barrier_req = NULL;

  CHECK(psdp_all_reduce(data, out, 5, PSDP_FLOAT32, PSDP_SUM, comm, NULL, &req) == PSDP_SUCCESS && req != NULL);
  CHECK(psdp_barrier(comm, &barrier_req) == PSDP_SUCCESS && barrier_req != NULL);
  CHECK_ERROR(psdp_request_wait_all(NULL, 2), PSDP_ERR_INVALID_ARGUMENT, NULL, "requests is NULL with count 2");
  CHECK(psdp_request_wait_all(NULL, 0) == PSDP_SUCCESS);
  {
    psdp_request_h pair[2] = {barrier_req, NULL};
    CHECK_ERROR(psdp_request_wait_all(pair, 2), PSDP_ERR_INVALID_ARGUMENT, NULL, "requests[1] is NULL");
    pair[1] = req;
    CHECK(psdp_request_wait_all(pair, 2) == PSDP_SUCCESS);
  }
  CHECK(psdp_request_wait(barrier_req) == PSDP_SUCCESS);
  CHECK(psdp_request_wait_timeout(req, 10.0) == PSDP_SUCCESS);
  CHECK(out[0] == 1 && out[4] == 5);
  CHECK(psdp_request_test(req) == PSDP_SUCCESS);
  CHECK_ERROR(psdp_request_wait_timeout(req, -1.0), PSDP_ERR_INVALID_ARGUMENT, comm, "timeout_s");
  CHECK(psdp_request_free(req) == PSDP_SUCCESS);
  CHECK(psdp_request_free(barrier_req) == PSDP_SUCCESS);

  /* Ordered after a request: the all-reduce behind it still completes, exactly. */
  CHECK_ERROR(psdp_comm_after(comm, NULL), PSDP_ERR_INVALID_ARGUMENT, comm, "request");
  CHECK(psdp_barrier(comm, &barrier_req) == PSDP_SUCCESS);
  CHECK(psdp_comm_after(comm, barrier_req) == PSDP_SUCCESS);
  memset(out, 0, sizeof(out));
  CHECK(psdp_all_reduce(data, out, 5, PSDP_FLOAT32, PSDP_SUM, comm, NULL, &req) == PSDP_SUCCESS);
  CHECK(psdp_request_wait(req) == PSDP_SUCCESS && out[0] == 1 && out[4] == 5);
  CHECK(psdp_request_free(req) == PSDP_SUCCESS);
  CHECK(psdp_request_free(barrier_req) == PSDP_SUCCESS);

  memset(out, 0, sizeof(out));
  CHECK(psdp_broadcast(data, out, 5, PSDP_FLOAT32, 0, comm, NULL, NULL) == PSDP_SUCCESS);
  CHECK(out[0] == 1 && out[4] == 5);
  CHECK(psdp_barrier(comm, NULL) == PSDP_SUCCESS);
}

/* Point-to-point, rooted and per-rank collectives on one rank: each moves this rank's data to itself; bad
 * arguments are reported naming the argument and leave the communicator usable. */
static void test_more_collectives(psdp_comm_h comm) {
  float data[4] = {1, 2, 3, 4};
  float out[4] = {0};
  size_t counts[1] = {4};
  psdp_request_h send = NULL, recv = NULL;

  CHECK(psdp_recv(out, 4, PSDP_FLOAT32, 0, comm, NULL, &recv) == PSDP_SUCCESS);
  CHECK(psdp_send(data, 4, PSDP_FLOAT32, 0, comm, NULL, &send) == PSDP_SUCCESS);
  CHECK(psdp_request_wait(send) == PSDP_SUCCESS && psdp_request_wait(recv) == PSDP_SUCCESS);
  CHECK(psdp_request_free(send) == PSDP_SUCCESS && psdp_request_free(recv) == PSDP_SUCCESS);
  CHECK(out[0] == 1 && out[3] == 4);
  memset(out, 0, sizeof(out));
  CHECK(psdp_gather(data, out, 4, PSDP_FLOAT32, 0, comm, NULL, NULL) == PSDP_SUCCESS && out[3] == 4);
  memset(out, 0, sizeof(out));
  CHECK(psdp_scatter(data, out, 4, PSDP_FLOAT32, 0, comm, NULL, NULL) == PSDP_SUCCESS && out[3] == 4);
  memset(out, 0, sizeof(out));
  CHECK(psdp_reduce(data, out, 4, PSDP_FLOAT32, PSDP_SUM, 0, comm, NULL, NULL) == PSDP_SUCCESS && out[3] == 4);
  memset(out, 0, sizeof(out));
  CHECK(psdp_all_to_all(data, out, 4, PSDP_FLOAT32, comm, NULL, NULL) == PSDP_SUCCESS && out[3] == 4);
  memset(out, 0, sizeof(out));
  CHECK(psdp_all_gather_v(data, out, counts, PSDP_FLOAT32, comm, NULL, NULL) == PSDP_SUCCESS && out[3] == 4);
  memset(out, 0, sizeof(out));
  CHECK(psdp_reduce_scatter_v(data, out, counts, PSDP_FLOAT32, PSDP_SUM, comm, NULL, NULL) == PSDP_SUCCESS &&
        out[3] == 4);

  /* Bad arguments are reported as such. */
  CHECK_ERROR(psdp_send(data, 4, PSDP_FLOAT32, 1, comm, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, comm, "peer");
  CHECK_ERROR(psdp_send(data, 4, PSDP_FLOAT32, 0, comm, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, comm, "itself");
  CHECK_ERROR(psdp_recv(NULL, 4, PSDP_FLOAT32, 0, comm, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, comm, "recvbuf");
  CHECK_ERROR(psdp_all_to_all(data, data + 1, 2, PSDP_FLOAT32, comm, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, comm,
              "overlap");
  CHECK_ERROR(psdp_gather(data, out, 4, PSDP_FLOAT32, -1, comm, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, comm, "root");
  CHECK_ERROR(psdp_scatter(data, out, 4, PSDP_FLOAT32, 1, comm, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, comm, "root");
  CHECK_ERROR(psdp_reduce(data, out, 4, PSDP_FLOAT32, PSDP_SUM, 3, comm, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, comm,
              "root");
  CHECK_ERROR(psdp_gather(data, out, 4, (psdp_dtype_t)99, 0, comm, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, comm,
              "dtype");
  CHECK_ERROR(psdp_all_gather_v(data, out, NULL, PSDP_FLOAT32, comm, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, comm,
              "recvcounts");
  CHECK_ERROR(psdp_reduce_scatter_v(data, data + 1, counts, PSDP_FLOAT32, PSDP_SUM, comm, NULL, NULL),
              PSDP_ERR_INVALID_ARGUMENT, comm, "overlap");
  CHECK_ERROR(psdp_send(data, 4, PSDP_FLOAT32, 0, comm, (void*)data, NULL), PSDP_ERR_UNSUPPORTED, comm, "stream");
  CHECK_ERROR(psdp_send(data, 4, PSDP_FLOAT32, 0, NULL, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "comm");
  CHECK(psdp_all_reduce(data, out, 4, PSDP_FLOAT32, PSDP_SUM, comm, NULL, NULL) == PSDP_SUCCESS);
  CHECK(out[3] == 4);
}

static void test_mem_alloc(void) {
  void* p = NULL;
  unsigned char* bytes;
  int zeroed = 1;
  size_t i;

  CHECK_ERROR(psdp_mem_alloc(NULL, 8), PSDP_ERR_INVALID_ARGUMENT, NULL, "ptr_p");
  CHECK_ERROR(psdp_mem_alloc(&p, 0), PSDP_ERR_INVALID_ARGUMENT, NULL, "bytes");
  CHECK(p == NULL);
  CHECK(psdp_mem_alloc(&p, 1000) == PSDP_SUCCESS && p != NULL);
  if (p == NULL) return;
  bytes = (unsigned char*)p;
  for (i = 0; i < 1000; ++i) zeroed = zeroed && bytes[i] == 0;
  CHECK(zeroed);
  memset(bytes, 0xab, 1000);
  CHECK(bytes[0] == 0xab && bytes[999] == 0xab);
  CHECK(psdp_mem_free(p) == PSDP_SUCCESS);
  CHECK_ERROR(psdp_mem_free(p), PSDP_ERR_INVALID_ARGUMENT, NULL, "psdp_mem_free");
  CHECK(psdp_mem_free(NULL) == PSDP_SUCCESS);
}

/* A one-rank communicator exercises the whole init path in-process: unique id, root thread, UCX. */
static void test_one_rank_lifecycle(void) {
  psdp_unique_id_t id;
  psdp_comm_h comm = NULL;
  char text[PSDP_UNIQUE_ID_STRING_BYTES];
  psdp_unique_id_t parsed;
  int rank = -1, size = -1;
  float data[5] = {1, 2, 3, 4, 5};
  float out[5] = {0};

  CHECK(psdp_get_unique_id(&id) == PSDP_SUCCESS);
  CHECK(psdp_unique_id_to_string(&id, text, sizeof(text)) == PSDP_SUCCESS);
  CHECK(strncmp(text, "psdp1:", 6) == 0);
  CHECK_ERROR(psdp_unique_id_to_string(&id, text, 8), PSDP_ERR_INVALID_ARGUMENT, NULL, "buf_bytes");
  CHECK(psdp_unique_id_from_string(text, &parsed) == PSDP_SUCCESS);
  CHECK(psdp_comm_init(1, &parsed, 0, NULL, &comm) == PSDP_SUCCESS);
  if (comm == NULL) {
    fprintf(stderr, "  init failed: %s\n", psdp_get_last_error(NULL));
    ++failures;
    return;
  }
  CHECK(psdp_comm_rank(comm, &rank) == PSDP_SUCCESS && rank == 0);
  CHECK(psdp_comm_size(comm, &size) == PSDP_SUCCESS && size == 1);
  CHECK(psdp_all_reduce(data, out, 5, PSDP_FLOAT32, PSDP_SUM, comm, NULL, NULL) == PSDP_SUCCESS);
  CHECK(out[0] == 1 && out[4] == 5);

  /* A bad argument through the C compiler: the error names it. The full table is in tests/unit/api. */
  CHECK_ERROR(psdp_all_reduce(NULL, out, 5, PSDP_FLOAT32, PSDP_SUM, comm, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, comm,
              "sendbuf");
  CHECK(psdp_reduce_scatter(data, out, 5, PSDP_FLOAT32, PSDP_SUM, comm, NULL, NULL) == PSDP_SUCCESS);
  CHECK(psdp_all_gather(data, out, 5, PSDP_FLOAT32, comm, NULL, NULL) == PSDP_SUCCESS);
  CHECK(out[2] == 3);
  test_one_rank_requests(comm);
  test_more_collectives(comm);
  {
    /* One rank: no lanes to anyone, one host holding it. */
    char signature[256];
    size_t len = sizeof(signature);
    CHECK(psdp_comm_interconnect(comm, signature, &len) == PSDP_SUCCESS);
    CHECK(strcmp(signature, "provider=ucx lanes=* hosts=1 ranks-per-host=1") == 0);
    CHECK(len == strlen(signature) + 1);
    CHECK_ERROR(psdp_comm_interconnect(comm, signature, NULL), PSDP_ERR_INVALID_ARGUMENT, comm, "len");
  }

  CHECK(psdp_comm_finalize(comm) == PSDP_SUCCESS);
  CHECK(psdp_comm_destroy(comm) == PSDP_SUCCESS);
}

int main(void) {
  test_abi();
  test_status_and_version();
  test_params();
  test_init_arguments();
  test_handle_arguments();
  test_mem_alloc();
  test_one_rank_lifecycle();
  return finish_checks();
}
