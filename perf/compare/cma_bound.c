/* The bound that the kernel's cross-memory copy puts on collectives over private buffers of one host,
 * measured the way an in-place all-gather of 2 ranks moves its data: two processes, each with a buffer of its
 * own (allocated on a page boundary, as psdp-perf's are, the kernel's best case, and written, as a
 * framework's tensors are), each reading the other's half into its own buffer with process_vm_readv, at once.
 *
 * Every system that reaches another process's private memory without a staging copy (psdp's direct
 * collectives, Open MPI's vader with CMA, UCX's rendezvous) moves a block this way, so none moves a block
 * faster. At 2 ranks that bounds the busbw of every collective over private buffers in nccl-tests' terms: an
 * all-gather or a reduce-scatter moves N/2 per rank across with one such copy (busbw (N/2)/t), an all-reduce
 * with two (busbw N/t). busbw here is an in-place all-gather's: (N/2) / time.
 *
 * Usage: cma_bound MIN_BYTES MAX_BYTES ITERS WARMUP
 *
 * Prints rows of size, time (us), algbw and busbw (GB/s) as mpi_coll_bench does; exits 1 if a read fails or
 * brings the wrong bytes. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static void put(int fd, const void* p, size_t n) {
  if (write(fd, p, n) != (ssize_t)n) {
    perror("cma_bound: write");
    exit(1);
  }
}

static void get(int fd, void* p, size_t n) {
  if (read(fd, p, n) != (ssize_t)n) {
    fprintf(stderr, "cma_bound: the other process is gone\n");
    exit(1);
  }
}

/* Reads `bytes` at `remote` of `pid` into `local`; a partial read goes on where it stopped. */
static int read_peer(pid_t pid, char* local, uintptr_t remote, size_t bytes) {
  while (bytes > 0) {
    struct iovec mine = {local, bytes}, theirs = {(void*)remote, bytes};
    ssize_t got = process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
    if (got <= 0) {
      fprintf(stderr, "cma_bound: process_vm_readv of pid %d: %s\n", (int)pid, strerror(got < 0 ? errno : EFAULT));
      return -1;
    }
    local += got;
    remote += (uintptr_t)got;
    bytes -= (size_t)got;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: cma_bound MIN_BYTES MAX_BYTES ITERS WARMUP\n");
    return 2;
  }
  size_t min_bytes = strtoull(argv[1], NULL, 0), max_bytes = strtoull(argv[2], NULL, 0);
  int iters = atoi(argv[3]), warmup = atoi(argv[4]);
  if (min_bytes < 2 || max_bytes < min_bytes || iters < 1 || warmup < 0) {
    fprintf(stderr, "cma_bound: need 2 <= MIN_BYTES <= MAX_BYTES, ITERS >= 1, WARMUP >= 0\n");
    return 2;
  }
  /* Each direction has its own pipe; a byte each way lines the two processes up. */
  int to_child[2], to_parent[2];
  if (pipe(to_child) != 0 || pipe(to_parent) != 0) {
    perror("cma_bound: pipe");
    return 1;
  }
  pid_t child = fork();
  if (child < 0) {
    perror("cma_bound: fork");
    return 1;
  }
  const int rank = child == 0 ? 1 : 0;
  const pid_t peer = rank == 1 ? getppid() : child;
  const int out = rank == 1 ? to_parent[1] : to_child[1], in = rank == 1 ? to_child[0] : to_parent[0];
  /* With the other ends closed, a process that exits ends the other's next read. */
  close(rank == 1 ? to_parent[0] : to_child[0]);
  close(rank == 1 ? to_child[1] : to_parent[1]);
  /* Allocated after the fork, so that no page is shared copy-on-write; written through, with a value of this
   * rank's, so that no page is the kernel's zero page. */
  char* buf = aligned_alloc(4096, (max_bytes + 4095) / 4096 * 4096);
  if (buf == NULL) {
    fprintf(stderr, "cma_bound: out of memory for %zu bytes\n", max_bytes);
    return 1;
  }
  memset(buf, 'a' + rank, max_bytes);
  uintptr_t mine = (uintptr_t)buf, theirs = 0;
  put(out, &mine, sizeof mine);
  get(in, &theirs, sizeof theirs);
  int status = 0;
  char token = 0;
  for (size_t bytes = min_bytes; bytes <= max_bytes && status == 0; bytes *= 2) {
    /* Rank r's half starts at r * half; each rank reads the other's half into the same place of its own. */
    const size_t half = bytes / 2;
    const size_t other = rank == 0 ? half : 0;
    double total = 0;
    for (int it = -warmup; it < iters && status == 0; ++it) {
      put(out, &token, 1);
      get(in, &token, 1);
      double start = now_us();
      status = read_peer(peer, buf + other, theirs + other, half);
      put(out, &token, 1);
      get(in, &token, 1);
      if (it >= 0) total += now_us() - start;
    }
    if (status == 0 && (buf[other] != 'a' + (1 - rank) || buf[other + half - 1] != 'a' + (1 - rank))) {
      fprintf(stderr, "cma_bound: rank %d read the wrong bytes\n", rank);
      status = -1;
    }
    memset(buf + other, 'a' + rank, half);
    if (rank == 0 && status == 0) {
      double us = total / iters;
      printf("%zu %.1f %.3f %.3f\n", bytes, us, (double)bytes / us / 1e3, (double)half / us / 1e3);
    }
  }
  if (rank == 1) return status == 0 ? 0 : 1;
  int child_status = 0;
  if (status != 0) kill(child, SIGKILL);
  waitpid(child, &child_status, 0);
  return status == 0 && WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0 ? 0 : 1;
}
