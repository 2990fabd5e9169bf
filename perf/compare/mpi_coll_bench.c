/*
 * The MPI side of perf/compare: MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather, MPI_Reduce, MPI_Gather,
 * MPI_Scatter, MPI_Alltoall and MPI_Sendrecv (to the next rank, from the one before) on float32 (sum), timed as
 * psdp-perf times its collectives, so that the two can be read side by side. Roots are rank 0.
 *
 *   mpirun -np 2 ./mpi_coll_bench {ar|rs|ag|reduce|gather|scatter|a2a|sendrecv} MIN_BYTES MAX_BYTES ITERS WARMUP
 *                                 [in-place]
 *
 * With "in-place" the calls take MPI_IN_PLACE (on the root, for the rooted ones), as nccl-tests' in-place
 * columns do: all-reduce and reduce sum the receive buffer into itself, reduce-scatter reads the whole vector
 * from the receive buffer and leaves this rank's block at its start, all-gather and gather find this rank's
 * block at its place in the receive buffer, scatter leaves the root's block in the send buffer. All-to-all
 * and send/recv have no in-place form here (psdp-perf prints N/A).
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

#include "coll_bench.h"

enum Coll { AR, RS, AG, REDUCE, GATHER, SCATTER, A2A, SENDRECV, NCOLLS };
static const char* const kNames[NCOLLS] = {"ar", "rs", "ag", "reduce", "gather", "scatter", "a2a", "sendrecv"};

static void usage(void) {
  fprintf(stderr,
          "usage: mpi_coll_bench {ar|rs|ag|reduce|gather|scatter|a2a|sendrecv} MIN_BYTES MAX_BYTES ITERS WARMUP "
          "[in-place]\n");
}

/* One call of `coll` on the whole vector of `all` elements (`per` per rank). */
static void call(enum Coll coll, int in_place, float* send, float* recv, size_t all, size_t per, int rank, int nranks) {
  void* inplace_send = rank == 0 ? MPI_IN_PLACE : (void*)send;
  switch (coll) {
    case AR:
      MPI_Allreduce(in_place ? MPI_IN_PLACE : send, in_place ? send : recv, (int)all, MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      break;
    case RS:
      MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send, in_place ? send : recv, (int)per, MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD);
      break;
    case AG:
      if (in_place) {
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, send, (int)per, MPI_FLOAT, MPI_COMM_WORLD);
      } else {
        MPI_Allgather(send, (int)per, MPI_FLOAT, recv, (int)per, MPI_FLOAT, MPI_COMM_WORLD);
      }
      break;
    case REDUCE:
      MPI_Reduce(in_place ? inplace_send : send, in_place ? send : recv, (int)all, MPI_FLOAT, MPI_SUM, 0,
                 MPI_COMM_WORLD);
      break;
    case GATHER:
      if (in_place) {
        MPI_Gather(inplace_send, (int)per, MPI_FLOAT, send, (int)per, MPI_FLOAT, 0, MPI_COMM_WORLD);
      } else {
        MPI_Gather(send, (int)per, MPI_FLOAT, recv, (int)per, MPI_FLOAT, 0, MPI_COMM_WORLD);
      }
      break;
    case SCATTER:
      if (in_place) {
        MPI_Scatter(send, (int)per, MPI_FLOAT, rank == 0 ? MPI_IN_PLACE : (void*)recv, (int)per, MPI_FLOAT, 0,
                    MPI_COMM_WORLD);
      } else {
        MPI_Scatter(send, (int)per, MPI_FLOAT, recv, (int)per, MPI_FLOAT, 0, MPI_COMM_WORLD);
      }
      break;
    case A2A: MPI_Alltoall(send, (int)per, MPI_FLOAT, recv, (int)per, MPI_FLOAT, MPI_COMM_WORLD); break;
    case SENDRECV:
      MPI_Sendrecv(send, (int)all, MPI_FLOAT, (rank + 1) % nranks, 0, recv, (int)all, MPI_FLOAT,
                   (rank + nranks - 1) % nranks, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      break;
    case NCOLLS: break;
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int coll_index = 0, in_place = 0;
  struct bench_sizes sizes;
  if (!bench_parse_command(argc, argv, kNames, NCOLLS, nranks, &coll_index, &in_place, &sizes) ||
      (in_place && (coll_index == A2A || coll_index == SENDRECV))) {
    if (rank == 0) usage();
    MPI_Finalize();
    return 2;
  }
  enum Coll coll = (enum Coll)coll_index;
  float *send, *recv;
  bench_buffers("mpi_coll_bench", sizes.max_bytes, rank, &send, &recv);
  double n = nranks;
  /* nccl-tests' busbw factors. */
  double factor = coll == AR ? 2.0 * (n - 1) / n : coll == REDUCE || coll == SENDRECV ? 1.0 : (n - 1) / n;
  for (size_t bytes = sizes.min_bytes; bytes <= sizes.max_bytes; bytes *= 2) {
    size_t all = bytes / sizeof(float), per = all / (size_t)nranks;
    double start = 0;
    for (int it = -sizes.warmup; it < sizes.iters; ++it) {
      if (it == 0) start = bench_start();
      call(coll, in_place, send, recv, all, per, rank, nranks);
    }
    /* The whole vector, as psdp-perf and nccl-tests: the collectives of blocks move per * nranks. */
    int whole = coll == AR || coll == REDUCE || coll == SENDRECV;
    bench_report((whole ? all : per * (size_t)nranks) * sizeof(float), start, sizes.iters, factor, rank);
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
