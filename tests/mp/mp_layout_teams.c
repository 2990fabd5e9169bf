/* README's recipe for sharded state, from C as an outside user follows it ("Shard plans"): plan with the
 * communicator's layout, size the optimizer state from the plan, register, make the shard and replica groups
 * of the layout (psdp_comm_split_layout; the two psdp_comm_split calls with --by-hand), then for every chunk
 * pack the gradients into padded blocks, reduce-scatter over the shard group, all-reduce over the replica
 * group, and all-gather the pieces back. Ranks report interleaved hosts (h0 = even ranks, h1 = odd ones) where
 * the world size is even, so that the layout is not the identity and a recipe that ignored it would fail.
 * bfloat16 weights with float32 gradients; gradients are small integers, so every sum is exact and checked
 * element by element. Bad arguments of psdp_comm_split_layout are refused on every rank. Run under psdp-run
 * for every G that divides the world size. With --real-hosts H the ranks run on H real hosts, rank r on host
 * r % H (tests/mp/multi_host_netns.sh), report nothing, and each checks that its shard group of size W / H is
 * the ranks of its own host. */
#include <psdp/psdp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c_api/c_checks.h"

#define COUNT 10007 /* prime, so chunks and pieces end unevenly */

/* Gradient element i of world rank r, and its sum over the world. */
static float grad_of(int r, size_t i) {
  return (float)(i % 7 + (size_t)r);
}
static float grad_sum(int nranks, size_t i) {
  return (float)(nranks * (int)(i % 7) + nranks * (nranks - 1) / 2);
}

struct job {
  psdp_comm_h comm;
  int me, nranks, group;
  int* layout;
  psdp_plan_h plan;
  psdp_comm_h shard_comm, replica_comm;
  int position;
  int by_hand;               /* --by-hand: the two psdp_comm_split calls instead of psdp_comm_split_layout */
  int real_hosts;            /* --real-hosts H: H hosts, rank r on host r % H; 0 when hosts are reported */
  float* optimizer_state[2]; /* registered: freed only after psdp_state_deregister */
};

/* Steps 1-4 of the header's registered-state sequence, then the two splits. */
static int set_up(struct job* job, uint16_t* weights, float* grads, psdp_state_h* registered) {
  psdp_buffer_desc_t state[4] = {
      {"w", weights, COUNT, PSDP_BFLOAT16, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0},
      {"w.grad", grads, COUNT, PSDP_FLOAT32, PSDP_BUFFER_GRADIENT, PSDP_MEMORY_HOST, 0},
      {"exp_avg", NULL, 0, PSDP_FLOAT32, PSDP_BUFFER_OPTIMIZER_STATE, PSDP_MEMORY_HOST, 0},
      {"exp_avg_sq", NULL, 0, PSDP_FLOAT32, PSDP_BUFFER_OPTIMIZER_STATE, PSDP_MEMORY_HOST, 0},
  };
  psdp_plan_config_t plan_config = PSDP_PLAN_CONFIG_INITIALIZER;
  psdp_plan_h registered_plan = NULL;
  uint64_t planned = 0, got = 0;
  size_t owned = 0;
  int i, rank_in = -1;
  plan_config.group_size = job->group;
  plan_config.chunk_bytes = 4096; /* many chunks */
  CHECK(psdp_comm_get_layout(job->comm, job->group, job->layout) == PSDP_SUCCESS);
  CHECK(psdp_plan_create(state, 4, job->nranks, job->layout, &plan_config, &job->plan) == PSDP_SUCCESS);
  if (job->plan == NULL) return 0;
  CHECK(psdp_plan_optimizer_state_count(job->plan, job->me, &owned) == PSDP_SUCCESS);
  for (i = 2; i < 4; ++i) {
    job->optimizer_state[i - 2] = calloc(owned > 0 ? owned : 1, sizeof(float));
    state[i].ptr = job->optimizer_state[i - 2];
    state[i].count = owned;
  }
  CHECK(psdp_state_register(job->comm, state, 4, &plan_config, registered) == PSDP_SUCCESS);
  if (*registered == NULL) fprintf(stderr, "register: %s\n", psdp_get_last_error(job->comm));
  if (*registered != NULL && psdp_state_get_plan(*registered, &registered_plan) == PSDP_SUCCESS) {
    CHECK(psdp_plan_hash(job->plan, &planned) == PSDP_SUCCESS && psdp_plan_hash(registered_plan, &got) == PSDP_SUCCESS);
    CHECK(planned == got);
    psdp_plan_free(registered_plan);
  }

  while (job->position < job->nranks && job->layout[job->position] != job->me) ++job->position;
  CHECK(job->position < job->nranks);
  if (job->position == job->nranks) return 0;
  if (job->real_hosts > 0 && job->group == job->nranks / job->real_hosts) {
    /* Host-local shard groups: every member on this rank's host. */
    for (i = 0; i < job->group; ++i) {
      CHECK(job->layout[(job->position / job->group) * job->group + i] % job->real_hosts == job->me % job->real_hosts);
    }
  }
  if (job->by_hand) {
    CHECK(psdp_comm_split(job->comm, job->position / job->group, job->position % job->group, NULL, &job->shard_comm) ==
          PSDP_SUCCESS);
    CHECK(psdp_comm_split(job->comm, job->position % job->group, job->position / job->group, NULL,
                          &job->replica_comm) == PSDP_SUCCESS);
  } else {
    CHECK(psdp_comm_split_layout(job->comm, job->group, NULL, &job->shard_comm, &job->replica_comm) == PSDP_SUCCESS);
  }
  if (job->shard_comm == NULL || job->replica_comm == NULL) return 0;
  CHECK(psdp_comm_rank(job->shard_comm, &rank_in) == PSDP_SUCCESS && rank_in == job->position % job->group);
  CHECK(psdp_comm_rank(job->replica_comm, &rank_in) == PSDP_SUCCESS && rank_in == job->position / job->group);
  return 1;
}

/* The world rank of member j of this rank's shard group. */
static int member(const struct job* job, int j) {
  return job->layout[(job->position / job->group) * job->group + j];
}

/* Member j's piece of chunk c, as README packs it: its owned ranges end to end. Returns the element count. */
static size_t ranges_of(const struct job* job, int j, size_t c, psdp_owned_range_t* ranges, size_t* nranges) {
  size_t r, count = 0;
  CHECK(psdp_plan_owned_ranges(job->plan, member(job, j), c, ranges, 16, nranges) == PSDP_SUCCESS && *nranges <= 16);
  if (*nranges > 16) *nranges = 16;
  for (r = 0; r < *nranges; ++r) count += ranges[r].count;
  return count;
}

/* One chunk through the two reductions and the all-gather; checks this rank's piece and the gathered chunk. */
static void run_chunk(const struct job* job, const float* grads, size_t c) {
  psdp_plan_chunk_t chunk;
  psdp_plan_space_t space = PSDP_PLAN_SPACE_INITIALIZER;
  psdp_owned_range_t ranges[16];
  size_t nranges = 0, r, e, at;
  int j, wrong = 0;
  CHECK(psdp_plan_get_chunk(job->plan, c, &chunk) == PSDP_SUCCESS);
  CHECK(psdp_plan_get_space(job->plan, chunk.space, &space) == PSDP_SUCCESS);
  CHECK(space.grad_dtype == PSDP_FLOAT32 && space.dtype == PSDP_BFLOAT16);
  const size_t padded = chunk.padded_group_piece;
  float* blocks = calloc((size_t)job->group * padded, sizeof(float));
  float* piece = malloc(padded * sizeof(float));
  for (j = 0; j < job->group; ++j) {
    ranges_of(job, j, c, ranges, &nranges);
    for (r = 0, at = (size_t)j * padded; r < nranges; at += ranges[r].count, ++r) {
      CHECK(ranges[r].buffer == 0);
      memcpy(blocks + at, grads + ranges[r].offset, ranges[r].count * sizeof(float));
    }
  }
  CHECK(psdp_reduce_scatter(blocks, piece, padded, space.grad_dtype, PSDP_SUM, job->shard_comm, NULL, NULL) ==
        PSDP_SUCCESS);
  CHECK(psdp_all_reduce(piece, piece, padded, space.grad_dtype, PSDP_SUM, job->replica_comm, NULL, NULL) ==
        PSDP_SUCCESS);

  /* This rank's piece: the world's sum of exactly the elements the plan says it owns, then zeros. */
  const size_t mine = ranges_of(job, job->position % job->group, c, ranges, &nranges);
  for (r = 0, at = 0; r < nranges; at += ranges[r].count, ++r) {
    for (e = 0; e < ranges[r].count; ++e) wrong += piece[at + e] != grad_sum(job->nranks, ranges[r].offset + e);
  }
  for (e = mine; e < padded; ++e) wrong += piece[e] != 0.0f;

  /* All-gather the pieces back into the blocks: every member's piece, summed, lands where it was packed. */
  CHECK(psdp_all_gather(piece, blocks, padded, space.grad_dtype, job->shard_comm, NULL, NULL) == PSDP_SUCCESS);
  for (j = 0; j < job->group; ++j) {
    ranges_of(job, j, c, ranges, &nranges);
    for (r = 0, at = (size_t)j * padded; r < nranges; at += ranges[r].count, ++r) {
      for (e = 0; e < ranges[r].count; ++e) wrong += blocks[at + e] != grad_sum(job->nranks, ranges[r].offset + e);
    }
  }
  CHECK(wrong == 0);
  if (wrong != 0) fprintf(stderr, "chunk %zu: %d wrong elements\n", c, wrong);
  free(blocks);
  free(piece);
}

/* Bad arguments are refused on every rank alike, before any message, naming the argument. */
static void check_bad_layout_calls(psdp_comm_h comm, int nranks) {
  psdp_comm_h a = NULL, b = NULL;
  CHECK(psdp_comm_split_layout(comm, 0, NULL, &a, &b) == PSDP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(psdp_get_last_error(comm), "group_size") != NULL);
  CHECK(psdp_comm_split_layout(comm, nranks + 1, NULL, &a, &b) == PSDP_ERR_INVALID_ARGUMENT);
  CHECK(psdp_comm_split_layout(comm, 1, NULL, NULL, &b) == PSDP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(psdp_get_last_error(comm), "shard_comm_p") != NULL);
  CHECK(psdp_comm_split_layout(comm, 1, NULL, &a, NULL) == PSDP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(psdp_get_last_error(comm), "replica_comm_p") != NULL);
  CHECK(a == NULL && b == NULL);
}

int main(int argc, char** argv) {
  struct job job;
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  char host[8];
  const char* rank_text = getenv("PSDP_RANK");
  int rank = rank_text != NULL ? atoi(rank_text) : 0;
  size_t chunks = 0, c, i;
  memset(&job, 0, sizeof(job));
  job.by_hand = argc > 1 && strcmp(argv[1], "--by-hand") == 0;
  if (argc > 2 && strcmp(argv[1], "--real-hosts") == 0) job.real_hosts = atoi(argv[2]);
  snprintf(host, sizeof(host), "h%d", rank % 2);
  const char* world_text = getenv("PSDP_WORLD_SIZE");
  if (job.real_hosts == 0 && world_text != NULL && atoi(world_text) % 2 == 0) config.host_id = host;
  if (psdp_comm_init_from_env(&config, &job.comm) != PSDP_SUCCESS) {
    fprintf(stderr, "init: %s\n", psdp_get_last_error(NULL));
    return 1;
  }
  psdp_comm_rank(job.comm, &job.me);
  psdp_comm_size(job.comm, &job.nranks);
  check_bad_layout_calls(job.comm, job.nranks);
  job.layout = calloc((size_t)job.nranks, sizeof(int));
  uint16_t* weights = calloc(COUNT, sizeof(uint16_t));
  float* grads = malloc(COUNT * sizeof(float));
  for (i = 0; i < COUNT; ++i) grads[i] = grad_of(job.me, i);

  for (job.group = 1; job.group <= job.nranks; ++job.group) {
    psdp_state_h registered = NULL;
    if (job.nranks % job.group != 0) continue;
    job.position = 0;
    if (set_up(&job, weights, grads, &registered)) {
      CHECK(psdp_plan_chunk_count(job.plan, &chunks) == PSDP_SUCCESS && chunks > 1);
      for (c = 0; c < chunks; ++c) run_chunk(&job, grads, c);
    }
    if (registered != NULL) psdp_state_deregister(registered);
    free(job.optimizer_state[0]);
    free(job.optimizer_state[1]);
    job.optimizer_state[0] = job.optimizer_state[1] = NULL;
    if (job.plan != NULL) psdp_plan_free(job.plan);
    job.plan = NULL;
    if (job.shard_comm != NULL) {
      CHECK(psdp_comm_finalize(job.shard_comm) == PSDP_SUCCESS);
      psdp_comm_destroy(job.shard_comm);
    }
    if (job.replica_comm != NULL) {
      CHECK(psdp_comm_finalize(job.replica_comm) == PSDP_SUCCESS);
      psdp_comm_destroy(job.replica_comm);
    }
    job.shard_comm = job.replica_comm = NULL;
    printf("rank %d: G=%d over %zu chunks done\n", job.me, job.group, chunks);
  }
  CHECK(psdp_comm_finalize(job.comm) == PSDP_SUCCESS);
  psdp_comm_destroy(job.comm);
  free(job.layout);
  free(weights);
  free(grads);
  return finish_checks();
}
