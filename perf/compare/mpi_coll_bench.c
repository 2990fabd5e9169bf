/*
 * The MPI side of perf/compare: MPI_Allreduce, MPI_Reduce_scatter_block and MPI_Allgather on float32 (sum),
 * timed as psdp-perf times its collectives, so that the two can be read side by side.
 *
 *   mpirun -np 2 ./mpi_coll_bench {ar|rs|ag} MIN_BYTES MAX_BYTES ITERS WARMUP [in-place]
 *
 * With "in-place" the calls take MPI_IN_PLACE, as nccl-tests' in-place columns do: all-reduce sums the
 * receive buffer into itself, reduce-scatter reads the whole vector from the receive buffer and leaves this
 * rank's block at its start, all-gather finds this rank's block at its place in the receive buffer.
 *
 * Sizes are the whole vector in bytes (nccl-tests' "size"), doubled from MIN to MAX. Buffers are allocated
 * and written once at the largest size before anything is timed, because first touch of fresh pages is slow
 * on some VMs and would be measured otherwise. The time of a size is the slowest rank's. Rank 0 prints one
 * line per size: "size time_us algbw_GBps busbw_GBps", with nccl-tests' busbw factors.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
  fprintf(stderr, "usage: mpi_coll_bench {ar|rs|ag} MIN_BYTES MAX_BYTES ITERS WARMUP [in-place]\n");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int in_place = argc == 7 && strcmp(argv[6], "in-place") == 0;
  if ((argc != 6 && !in_place) || (strcmp(argv[1], "ar") && strcmp(argv[1], "rs") && strcmp(argv[1], "ag"))) {
    if (rank == 0) usage();
    MPI_Finalize();
    return 2;
  }
  int is_ar = strcmp(argv[1], "ar") == 0, is_rs = strcmp(argv[1], "rs") == 0;
  size_t min_bytes = strtoull(argv[2], NULL, 10), max_bytes = strtoull(argv[3], NULL, 10);
  int iters = atoi(argv[4]), warmup = atoi(argv[5]);
  if (min_bytes < 4 * (size_t)nranks || max_bytes < min_bytes || iters < 1 || warmup < 0) {
    if (rank == 0) usage();
    MPI_Finalize();
    return 2;
  }
  size_t max_elems = max_bytes / sizeof(float);
  float* send = malloc(max_elems * sizeof(float));
  float* recv = malloc(max_elems * sizeof(float));
  if (!send || !recv) {
    fprintf(stderr, "mpi_coll_bench: out of memory for %zu bytes\n", max_bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  /* Small integers: sums stay exact and never reach denormals, which would slow the adds. (In place,
   * all-reduce doubles them every call; infinity, if reached, costs no more than any other value.) */
  for (size_t i = 0; i < max_elems; ++i) {
    send[i] = (float)((i + (size_t)rank) % 5);
    recv[i] = 0.0f;
  }
  double n = nranks;
  double factor = is_ar ? 2.0 * (n - 1) / n : (n - 1) / n;
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    size_t all = bytes / sizeof(float), per = all / (size_t)nranks;
    double start = 0;
    for (int it = -warmup; it < iters; ++it) {
      if (it == 0) {
        /* Line the ranks up so that the clock starts together everywhere. */
        MPI_Barrier(MPI_COMM_WORLD);
        start = MPI_Wtime();
      }
      if (in_place && is_ar) {
        MPI_Allreduce(MPI_IN_PLACE, send, (int)all, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      } else if (in_place && is_rs) {
        MPI_Reduce_scatter_block(MPI_IN_PLACE, send, (int)per, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      } else if (in_place) {
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, send, (int)per, MPI_FLOAT, MPI_COMM_WORLD);
      } else if (is_ar) {
        MPI_Allreduce(send, recv, (int)all, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      } else if (is_rs) {
        MPI_Reduce_scatter_block(send, recv, (int)per, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      } else {
        MPI_Allgather(send, (int)per, MPI_FLOAT, recv, (int)per, MPI_FLOAT, MPI_COMM_WORLD);
      }
    }
    double my_us = (MPI_Wtime() - start) * 1e6 / iters, max_us = 0;
    MPI_Reduce(&my_us, &max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    /* The whole vector, as psdp-perf and nccl-tests: reduce-scatter and all-gather move per * nranks. */
    size_t total = (is_ar ? all : per * (size_t)nranks) * sizeof(float);
    double algbw = total / max_us / 1e3;
    if (rank == 0) printf("%zu %.1f %.3f %.3f\n", total, max_us, algbw, algbw * factor);
    fflush(stdout);
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
