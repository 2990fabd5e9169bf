/*
 * What mpi_coll_bench.c and ucc_coll_bench.c share, so that the two time their collectives alike: the sizes
 * and counts of their command lines, buffers written once at the largest size, and the line each prints per
 * size from the slowest rank's time. Both programs are single files that perf/compare/run_compare.py
 * compiles; this header is included from their directory.
 */
#ifndef PSDP_PERF_COMPARE_COLL_BENCH_H
#define PSDP_PERF_COMPARE_COLL_BENCH_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_sizes {
  size_t min_bytes, max_bytes; /* whole vectors, doubled from min to max */
  int iters, warmup;
};

/* The command line "NAME MIN_BYTES MAX_BYTES ITERS WARMUP [in-place]": NAME's index in `names` (`count` of
 * them), whether "in-place" was given, and the sizes; 0 when it is not usable with `nranks`. */
static int bench_parse_command(int argc, char** argv, const char* const* names, int count, int nranks, int* coll,
                               int* in_place, struct bench_sizes* sizes) {
  *in_place = argc == 7 && strcmp(argv[6], "in-place") == 0;
  if (argc != 6 && !*in_place) return 0;
  for (*coll = 0; *coll < count && strcmp(argv[1], names[*coll]) != 0; ++*coll) {
  }
  if (*coll == count) return 0;
  sizes->min_bytes = strtoull(argv[2], NULL, 10);
  sizes->max_bytes = strtoull(argv[3], NULL, 10);
  sizes->iters = atoi(argv[4]);
  sizes->warmup = atoi(argv[5]);
  return sizes->min_bytes >= 4 * (size_t)nranks && sizes->max_bytes >= sizes->min_bytes && sizes->iters >= 1 &&
         sizes->warmup >= 0;
}

/* A send and a receive buffer of `bytes`, allocated and written before anything is timed, because first touch
 * of fresh pages is slow on some VMs and would be measured otherwise. Small integers: sums stay exact and never
 * reach denormals, which would slow the adds (in place, all-reduce doubles them every call; infinity, if
 * reached, costs no more than any other value). Aborts the job when out of memory. */
static void bench_buffers(const char* program, size_t bytes, int rank, float** send, float** recv) {
  size_t elems = bytes / sizeof(float);
  *send = malloc(elems * sizeof(float));
  *recv = malloc(elems * sizeof(float));
  if (!*send || !*recv) {
    fprintf(stderr, "%s: out of memory for %zu bytes\n", program, bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < elems; ++i) {
    (*send)[i] = (float)((i + (size_t)rank) % 5);
    (*recv)[i] = 0.0f;
  }
}

/* Lines the ranks up so that the clock starts together everywhere; returns the start. */
static double bench_start(void) {
  MPI_Barrier(MPI_COMM_WORLD);
  return MPI_Wtime();
}

/* Rank 0 prints "size time_us algbw_GBps busbw_GBps" for `iters` calls since `start` that moved `total` bytes
 * each (nccl-tests' size), from the slowest rank's time; `factor` is nccl-tests' busbw factor. */
static void bench_report(size_t total, double start, int iters, double factor, int rank) {
  double my_us = (MPI_Wtime() - start) * 1e6 / iters, max_us = 0;
  MPI_Reduce(&my_us, &max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  double algbw = total / max_us / 1e3;
  if (rank == 0) printf("%zu %.1f %.3f %.3f\n", total, max_us, algbw, algbw * factor);
  fflush(stdout);
}

#endif
