/* Built against an installed psdp, through find_package(psdp CONFIG) and through pkg-config. Alone it checks
 * that the library it loaded is the one its header describes; started by psdp-run it is a rank of a job and
 * all-reduces integers, checked exactly. */
#include <psdp/psdp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 4096

static int run_rank(void) {
  psdp_comm_h comm = NULL;
  psdp_status_t s = psdp_comm_init_from_env(NULL, &comm);
  if (s != PSDP_SUCCESS) {
    fprintf(stderr, "init: %s\n", psdp_get_last_error(NULL));
    return 1;
  }
  int rank = 0, nranks = 0;
  psdp_comm_rank(comm, &rank);
  psdp_comm_size(comm, &nranks);
  static int32_t data[COUNT];
  for (int i = 0; i < COUNT; ++i) data[i] = (rank + 1) * (i % 100);
  s = psdp_all_reduce(data, data, COUNT, PSDP_INT32, PSDP_SUM, comm, NULL, NULL);
  int wrong = 0;
  const int32_t ranks_sum = nranks * (nranks + 1) / 2;
  for (int i = 0; i < COUNT; ++i) wrong += data[i] != ranks_sum * (i % 100);
  if (s != PSDP_SUCCESS || wrong != 0) {
    fprintf(stderr, "rank %d: all-reduce %s, %d wrong elements: %s\n", rank, psdp_status_string(s), wrong,
            psdp_get_last_error(comm));
  }
  psdp_status_t fin = psdp_comm_finalize(comm);
  psdp_comm_destroy(comm);
  if (s != PSDP_SUCCESS || wrong != 0 || fin != PSDP_SUCCESS) return 1;
  printf("rank %d of %d: all-reduce exact\n", rank, nranks);
  return 0;
}

int main(void) {
  int version = 0;
  if (psdp_get_version(&version) != PSDP_SUCCESS || version != PSDP_VERSION_CODE) {
    fprintf(stderr, "version %d, header says %d\n", version, PSDP_VERSION_CODE);
    return 1;
  }
  if (strcmp(psdp_status_string(PSDP_ERR_TIMEOUT), "timeout") != 0) return 1;
  if (getenv("PSDP_RANK") != NULL) return run_rank();
  printf("psdp %d linked\n", version);
  return 0;
}
