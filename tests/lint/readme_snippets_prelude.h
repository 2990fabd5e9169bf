/* What the README's C snippets use without declaring it: the variables a training program would already have.
 * tests/lint/check_readme_snippets.py puts each snippet in a function after this. A snippet may declare any of
 * these again; its own declaration then shadows the one here. */
#include <psdp/psdp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

psdp_comm_h comm;
float *grads, *params, *shard;
size_t n, shard_n;
int rank, host_id;
/* What a later snippet takes from an earlier one (README's sharded-state recipe). */
psdp_plan_h plan;
psdp_state_h registered;
psdp_comm_h shard_comm, replica_comm;
int* layout;
int G, p;
size_t c;
