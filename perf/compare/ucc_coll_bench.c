/*
 * The UCC side of perf/compare: UCC's all-reduce, reduce-scatter and all-gather on float32 (sum) in host
 * memory, timed as psdp-perf and mpi_coll_bench time theirs, so that the three can be read side by side.
 * ucc_perftest times each call between two barriers and adds up only the calls: a rank that waits for a core
 * (another process, a framework's threads) is then waited for outside the clock, so under contention its
 * figures are those of two ranks that happen to run together. Here the calls run back to back, as an
 * application makes them, and the clock runs over all of them.
 *
 *   mpirun -np 2 ./ucc_coll_bench {ar|rs|ag} MIN_BYTES MAX_BYTES ITERS WARMUP [in-place]
 *
 * Each call is what ucc_perftest does per iteration: ucc_collective_init, post, ucc_context_progress until
 * done, finalize. UCC's own settings come from the environment (UCC_TL_UCP_TUNE picks the algorithms). MPI
 * only starts the processes and carries UCC's out-of-band exchanges, as in ucc_perftest. With "in-place" the
 * calls take UCC_COLL_ARGS_FLAG_IN_PLACE: the whole vector in the destination buffer.
 *
 * Sizes are the whole vector in bytes (nccl-tests' "size"), doubled from MIN to MAX. Buffers are allocated
 * and written once at the largest size before anything is timed (first touch of fresh pages is slow on some
 * VMs). The time of a size is the slowest rank's. Rank 0 prints one line per size: "size time_us algbw_GBps
 * busbw_GBps", with nccl-tests' busbw factors.
 *
 * Build (perf/compare/run_compare.py does): mpicc -O2 -I PREFIX/include ucc_coll_bench.c -L PREFIX/lib
 * -Wl,-rpath,PREFIX/lib -lucc
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucc/api/ucc.h>

#include "coll_bench.h"

enum Coll { AR, RS, AG, NCOLLS };
static const char* const kNames[NCOLLS] = {"ar", "rs", "ag"};

static void usage(void) {
  fprintf(stderr, "usage: ucc_coll_bench {ar|rs|ag} MIN_BYTES MAX_BYTES ITERS WARMUP [in-place]\n");
}

static void check(ucc_status_t status, const char* what) {
  if (status == UCC_OK) return;
  fprintf(stderr, "ucc_coll_bench: %s: %s\n", what, ucc_status_string(status));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* UCC's out-of-band all-gather over MPI, as ucc_perftest's MPI bootstrap does it. */
static ucc_status_t oob_allgather(void* sbuf, void* rbuf, size_t msglen, void* coll_info, void** req) {
  MPI_Request* request = malloc(sizeof(*request));
  if (!request) return UCC_ERR_NO_MEMORY;
  MPI_Iallgather(sbuf, (int)msglen, MPI_BYTE, rbuf, (int)msglen, MPI_BYTE, (MPI_Comm)(uintptr_t)coll_info, request);
  *req = request;
  return UCC_OK;
}

static ucc_status_t oob_test(void* req) {
  int done = 0;
  MPI_Test((MPI_Request*)req, &done, MPI_STATUS_IGNORE);
  return done ? UCC_OK : UCC_INPROGRESS;
}

static ucc_status_t oob_free(void* req) {
  free(req);
  return UCC_OK;
}

static ucc_oob_coll_t world_oob(int rank, int nranks) {
  ucc_oob_coll_t oob;
  memset(&oob, 0, sizeof(oob));
  oob.allgather = oob_allgather;
  oob.req_test = oob_test;
  oob.req_free = oob_free;
  oob.coll_info = (void*)(uintptr_t)MPI_COMM_WORLD;
  oob.n_oob_eps = (uint32_t)nranks;
  oob.oob_ep = (uint32_t)rank;
  return oob;
}

/* The library, a context and a team of every rank, set up as ucc_perftest sets up its own. */
static void setup(int rank, int nranks, ucc_lib_h* lib, ucc_context_h* context, ucc_team_h* team) {
  ucc_lib_config_h lib_config;
  check(ucc_lib_config_read(NULL, NULL, &lib_config), "ucc_lib_config_read");
  ucc_lib_params_t lib_params;
  memset(&lib_params, 0, sizeof(lib_params));
  lib_params.mask = UCC_LIB_PARAM_FIELD_THREAD_MODE;
  lib_params.thread_mode = UCC_THREAD_SINGLE;
  check(ucc_init(&lib_params, lib_config, lib), "ucc_init");
  ucc_lib_config_release(lib_config);

  ucc_context_config_h context_config;
  check(ucc_context_config_read(*lib, NULL, &context_config), "ucc_context_config_read");
  char eps[16];
  snprintf(eps, sizeof(eps), "%d", nranks);
  check(ucc_context_config_modify(context_config, NULL, "ESTIMATED_NUM_EPS", eps), "ucc_context_config_modify");
  ucc_context_params_t context_params;
  memset(&context_params, 0, sizeof(context_params));
  context_params.mask = UCC_CONTEXT_PARAM_FIELD_TYPE | UCC_CONTEXT_PARAM_FIELD_OOB;
  context_params.type = UCC_CONTEXT_SHARED;
  context_params.oob = world_oob(rank, nranks);
  check(ucc_context_create(*lib, &context_params, context_config, context), "ucc_context_create");
  ucc_context_config_release(context_config);

  ucc_team_params_t team_params;
  memset(&team_params, 0, sizeof(team_params));
  team_params.mask = UCC_TEAM_PARAM_FIELD_EP | UCC_TEAM_PARAM_FIELD_EP_RANGE | UCC_TEAM_PARAM_FIELD_OOB;
  team_params.oob = world_oob(rank, nranks);
  team_params.ep = (uint64_t)rank;
  team_params.ep_range = UCC_COLLECTIVE_EP_RANGE_CONTIG;
  check(ucc_team_create_post(context, 1, &team_params, team), "ucc_team_create_post");
  ucc_status_t status;
  while ((status = ucc_team_create_test(*team)) == UCC_INPROGRESS) {
  }
  check(status, "ucc_team_create_test");
}

/* The arguments of one call of `coll` on the whole vector of `all` elements (`per` per rank). */
static ucc_coll_args_t args_of(enum Coll coll, int in_place, float* send, float* recv, size_t all, size_t per) {
  static const ucc_coll_type_t kTypes[NCOLLS] = {UCC_COLL_TYPE_ALLREDUCE, UCC_COLL_TYPE_REDUCE_SCATTER,
                                                 UCC_COLL_TYPE_ALLGATHER};
  ucc_coll_args_t args;
  memset(&args, 0, sizeof(args));
  args.coll_type = kTypes[coll];
  args.op = UCC_OP_SUM;
  if (in_place) {
    args.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    args.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
  }
  size_t send_count = coll == AG ? per : all;
  size_t recv_count = coll == RS ? per : all;
  if (in_place) recv_count = all;
  args.src.info = (ucc_coll_buffer_info_t){
      .buffer = in_place ? NULL : send,
      .count = in_place ? 0 : send_count,
      .datatype = UCC_DT_FLOAT32,
      .mem_type = UCC_MEMORY_TYPE_HOST,
  };
  args.dst.info = (ucc_coll_buffer_info_t){
      .buffer = in_place ? send : recv,
      .count = recv_count,
      .datatype = UCC_DT_FLOAT32,
      .mem_type = UCC_MEMORY_TYPE_HOST,
  };
  return args;
}

static void call(ucc_team_h team, ucc_context_h context, ucc_coll_args_t* args) {
  ucc_coll_req_h request;
  check(ucc_collective_init(args, &request, team), "ucc_collective_init");
  check(ucc_collective_post(request), "ucc_collective_post");
  ucc_status_t status;
  while ((status = ucc_collective_test(request)) == UCC_INPROGRESS) ucc_context_progress(context);
  check(status, "the collective");
  check(ucc_collective_finalize(request), "ucc_collective_finalize");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int coll_index = 0, in_place = 0;
  struct bench_sizes sizes;
  if (!bench_parse_command(argc, argv, kNames, NCOLLS, nranks, &coll_index, &in_place, &sizes)) {
    if (rank == 0) usage();
    MPI_Finalize();
    return 2;
  }
  enum Coll coll = (enum Coll)coll_index;
  ucc_lib_h lib;
  ucc_context_h context;
  ucc_team_h team;
  setup(rank, nranks, &lib, &context, &team);

  float *send, *recv;
  bench_buffers("ucc_coll_bench", sizes.max_bytes, rank, &send, &recv);
  double n = nranks;
  /* nccl-tests' busbw factors. */
  double factor = coll == AR ? 2.0 * (n - 1) / n : (n - 1) / n;
  for (size_t bytes = sizes.min_bytes; bytes <= sizes.max_bytes; bytes *= 2) {
    /* The collectives of blocks move per * nranks: the size rounded down to whole blocks. */
    size_t elems = bytes / sizeof(float), per = elems / (size_t)nranks;
    size_t all = coll == AR ? elems : per * (size_t)nranks;
    ucc_coll_args_t args = args_of(coll, in_place, send, recv, all, per);
    double start = 0;
    for (int it = -sizes.warmup; it < sizes.iters; ++it) {
      if (it == 0) start = bench_start();
      call(team, context, &args);
    }
    bench_report(all * sizeof(float), start, sizes.iters, factor, rank);
  }
  free(send);
  free(recv);
  ucc_status_t status;
  while ((status = ucc_team_destroy(team)) == UCC_INPROGRESS) {
  }
  check(status, "ucc_team_destroy");
  check(ucc_context_destroy(context), "ucc_context_destroy");
  check(ucc_finalize(lib), "ucc_finalize");
  MPI_Finalize();
  return 0;
}
