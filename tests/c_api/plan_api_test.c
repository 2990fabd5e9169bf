/* The standalone shard-plan API from C: struct layouts, a plan's queries adding up, resharding, and bad
 * arguments answered with invalid argument (or invalid usage) and a message naming the field. */
#include <psdp/psdp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_checks.h"

#define NBUF 5
static psdp_buffer_desc_t buffers[NBUF];

static void make_buffers(void) {
  /* bfloat16 weights with float32 gradients, and one optimizer-state buffer. */
  static const char* names[NBUF] = {"embed", "norm", "embed.grad", "norm.grad", "exp_avg"};
  static const size_t counts[NBUF] = {100000, 896, 100000, 896, 1};
  int i;
  for (i = 0; i < NBUF; ++i) {
    buffers[i].name = names[i];
    buffers[i].ptr = NULL;
    buffers[i].count = counts[i];
    buffers[i].dtype = i < 2 ? PSDP_BFLOAT16 : PSDP_FLOAT32;
    buffers[i].role = i < 2 ? PSDP_BUFFER_PARAMETER : i < 4 ? PSDP_BUFFER_GRADIENT : PSDP_BUFFER_OPTIMIZER_STATE;
    buffers[i].memory_kind = PSDP_MEMORY_HOST;
    buffers[i].device = 0;
  }
}

static void test_abi(void) {
  CHECK(offsetof(psdp_plan_config_t, size) == 0);
  CHECK(offsetof(psdp_plan_config_t, magic) == 8);
  CHECK(offsetof(psdp_plan_config_t, version) == 12);
  CHECK(offsetof(psdp_plan_config_t, group_size) == 16);
  CHECK(offsetof(psdp_plan_config_t, level) == 20);
  CHECK(offsetof(psdp_plan_config_t, chunk_bytes) == 24);
  CHECK(offsetof(psdp_plan_config_t, align_bytes) == 32);
  CHECK(offsetof(psdp_plan_config_t, pad_bytes) == 40);
  CHECK(sizeof(psdp_plan_config_t) == 48);
  CHECK(offsetof(psdp_buffer_desc_t, count) == 16);
  CHECK(offsetof(psdp_buffer_desc_t, device) == 36);
  CHECK(sizeof(psdp_buffer_desc_t) == 40);
  CHECK(sizeof(psdp_owned_range_t) == 24);
  CHECK(sizeof(psdp_reshard_move_t) == 32);
  CHECK(sizeof(psdp_plan_chunk_t) == 48);
  CHECK(offsetof(psdp_plan_space_t, dtype) == 16);
  CHECK(offsetof(psdp_plan_space_t, reserved) == 36);
  CHECK(offsetof(psdp_plan_space_t, count) == 40);
  CHECK(offsetof(psdp_plan_space_t, chunk_count) == 56);
  CHECK(sizeof(psdp_plan_space_t) == 64);
}

static psdp_plan_h create(int world_size, int group_size, int level, size_t chunk_bytes) {
  psdp_plan_config_t config = PSDP_PLAN_CONFIG_INITIALIZER;
  psdp_plan_h plan = NULL;
  config.group_size = group_size;
  config.level = level;
  config.chunk_bytes = chunk_bytes;
  CHECK(psdp_plan_create(buffers, NBUF, world_size, NULL, &config, &plan) == PSDP_SUCCESS);
  if (plan == NULL) fprintf(stderr, "  psdp_plan_create: %s\n", psdp_get_last_error(NULL));
  return plan;
}

static void test_queries(void) {
  psdp_plan_h plan = create(8, 4, PSDP_SHARD_LEVEL_WORLD, 64 * 1024);
  psdp_plan_h same;
  size_t chunks = 0, c, total = 0, n = 0, state = 0, chunk = 0, at = 0;
  uint64_t h1 = 0, h2 = 0;
  int r;
  psdp_plan_chunk_t info;
  psdp_owned_range_t* ranges;
  /* Another rank: other addresses and devices, the same plan. */
  buffers[0].ptr = &chunks;
  buffers[1].device = 3;
  same = create(8, 4, PSDP_SHARD_LEVEL_WORLD, 64 * 1024);
  make_buffers();
  if (plan == NULL || same == NULL) return;
  CHECK(psdp_plan_hash(plan, &h1) == PSDP_SUCCESS && psdp_plan_hash(same, &h2) == PSDP_SUCCESS && h1 == h2);
  CHECK(psdp_plan_chunk_count(plan, &chunks) == PSDP_SUCCESS && chunks > 1);
  for (c = 0; c < chunks; ++c) {
    CHECK(psdp_plan_get_chunk(plan, c, &info) == PSDP_SUCCESS);
    CHECK(info.dtype == PSDP_BFLOAT16 && info.memory_kind == PSDP_MEMORY_HOST && info.space == 0);
    total += info.count;
  }
  CHECK(total == 100000 + 896);
  total = 0;
  for (r = 0; r < 8; ++r) {
    CHECK(psdp_plan_owned_ranges(plan, r, PSDP_PLAN_ALL_CHUNKS, NULL, 0, &n) == PSDP_SUCCESS && n > 0);
    ranges = (psdp_owned_range_t*)malloc(n * sizeof(*ranges));
    CHECK(psdp_plan_owned_ranges(plan, r, PSDP_PLAN_ALL_CHUNKS, ranges, n, &n) == PSDP_SUCCESS);
    CHECK(psdp_plan_optimizer_state_count(plan, r, &state) == PSDP_SUCCESS);
    /* Chunk by chunk, the shard file's offsets add up the owned counts. */
    {
      size_t k, offset = 0, expect = 0, owned = 0;
      for (k = 0; k < chunks; ++k) {
        CHECK(psdp_plan_shard_offset(plan, r, k, &offset) == PSDP_SUCCESS && offset == expect);
        CHECK(psdp_plan_owned_count(plan, r, k, &owned) == PSDP_SUCCESS);
        expect += owned;
      }
      CHECK(expect == state);
    }
    for (c = 0; c < n; ++c) {
      CHECK(ranges[c].buffer == 0 || ranges[c].buffer == 1);
      state -= ranges[c].count;
    }
    CHECK(state == 0);
    free(ranges);
    CHECK(psdp_plan_owned_count(plan, r, PSDP_PLAN_ALL_CHUNKS, &n) == PSDP_SUCCESS);
    total += n;
  }
  CHECK(total == 100000 + 896); /* level world: every element once in the world */
  /* The gradient's element lies where its parameter's does. */
  CHECK(psdp_plan_find_chunk(plan, 3, 895, &chunk, &at) == PSDP_SUCCESS);
  CHECK(chunk == chunks - 1);
  CHECK(psdp_plan_get_chunk(plan, chunk, &info) == PSDP_SUCCESS && info.offset + at == 100000 + 895);
  CHECK_ERROR(psdp_plan_find_chunk(plan, 4, 0, &chunk, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "optimizer state");
  CHECK_ERROR(psdp_plan_find_chunk(plan, 1, 896, &chunk, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "offset 896");
  CHECK_ERROR(psdp_plan_find_chunk(plan, 5, 0, &chunk, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "buffer 5");
  CHECK_ERROR(psdp_plan_owned_count(plan, 8, 0, &n), PSDP_ERR_INVALID_ARGUMENT, NULL, "rank 8");
  CHECK_ERROR(psdp_plan_owned_count(plan, 0, chunks, &n), PSDP_ERR_INVALID_ARGUMENT, NULL, "chunk");
  CHECK_ERROR(psdp_plan_shard_offset(plan, 0, PSDP_PLAN_ALL_CHUNKS, &n), PSDP_ERR_INVALID_ARGUMENT, NULL, "chunk");
  CHECK_ERROR(psdp_plan_shard_offset(plan, -1, 0, &n), PSDP_ERR_INVALID_ARGUMENT, NULL, "rank -1");
  CHECK_ERROR(psdp_plan_shard_offset(plan, 0, 0, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "offset_p");
  CHECK_ERROR(psdp_plan_get_chunk(plan, PSDP_PLAN_ALL_CHUNKS, &info), PSDP_ERR_INVALID_ARGUMENT, NULL, "chunk");
  CHECK_ERROR(psdp_plan_owned_ranges(plan, 0, 0, NULL, 3, &n), PSDP_ERR_INVALID_ARGUMENT, NULL, "NULL");
  CHECK_ERROR(psdp_plan_hash(plan, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "hash_p");
  CHECK(psdp_plan_free(same) == PSDP_SUCCESS);
  CHECK_ERROR(psdp_plan_free(same), PSDP_ERR_INVALID_USAGE, NULL, "plan");
  CHECK_ERROR(psdp_plan_hash(same, &h2), PSDP_ERR_INVALID_USAGE, NULL, "plan");
  CHECK(psdp_plan_free(plan) == PSDP_SUCCESS);
}

/* What packing a chunk needs beyond psdp_plan_chunk_t: its space's gradient dtype. bfloat16 parameters with
 * float32 gradients; a plan without gradients reports the parameters' dtype for both. */
static void test_spaces(void) {
  psdp_plan_h plan = create(8, 4, PSDP_SHARD_LEVEL_GROUP, 64 * 1024);
  psdp_plan_h params_only = NULL;
  psdp_plan_space_t space = PSDP_PLAN_SPACE_INITIALIZER;
  psdp_plan_space_t longer[2];
  size_t spaces = 0, chunks = 0;
  if (plan == NULL) return;
  CHECK(psdp_plan_space_count(plan, &spaces) == PSDP_SUCCESS && spaces == 1);
  CHECK(psdp_plan_chunk_count(plan, &chunks) == PSDP_SUCCESS);
  CHECK(psdp_plan_get_space(plan, 0, &space) == PSDP_SUCCESS);
  CHECK(space.dtype == PSDP_BFLOAT16 && space.memory_kind == PSDP_MEMORY_HOST);
  CHECK(space.has_gradients == 1 && space.grad_dtype == PSDP_FLOAT32 && space.grad_memory_kind == PSDP_MEMORY_HOST);
  CHECK(space.count == 100000 + 896 && space.chunk_count == chunks);
  CHECK(space.align_unit == 256 / 2); /* 256-byte alignment in the narrower dtype, bfloat16 */
  CHECK(space.size == sizeof(psdp_plan_space_t) && space.magic == PSDP_PLAN_SPACE_MAGIC);
  /* A caller built against a later, longer struct keeps what this version does not know. */
  memset(longer, 0x5a, sizeof(longer));
  longer[0].size = sizeof(longer);
  longer[0].magic = PSDP_PLAN_SPACE_MAGIC;
  CHECK(psdp_plan_get_space(plan, 0, &longer[0]) == PSDP_SUCCESS && longer[0].grad_dtype == PSDP_FLOAT32);
  CHECK(((const unsigned char*)&longer[1])[0] == 0x5a && longer[0].size == sizeof(longer));
  CHECK_ERROR(psdp_plan_get_space(plan, 1, &space), PSDP_ERR_INVALID_ARGUMENT, NULL, "space 1");
  CHECK_ERROR(psdp_plan_get_space(plan, 0, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "space_p");
  space.magic = 0;
  CHECK_ERROR(psdp_plan_get_space(plan, 0, &space), PSDP_ERR_INVALID_ARGUMENT, NULL, "PSDP_PLAN_SPACE_INITIALIZER");
  space.magic = PSDP_PLAN_SPACE_MAGIC;
  space.size = 8;
  CHECK_ERROR(psdp_plan_get_space(plan, 0, &space), PSDP_ERR_INVALID_ARGUMENT, NULL, "size 8");
  CHECK_ERROR(psdp_plan_space_count(plan, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "count_p");
  CHECK(psdp_plan_free(plan) == PSDP_SUCCESS);

  CHECK(psdp_plan_create(buffers, 2, 8, NULL, NULL, &params_only) == PSDP_SUCCESS);
  if (params_only == NULL) return;
  space.size = sizeof(space);
  CHECK(psdp_plan_get_space(params_only, 0, &space) == PSDP_SUCCESS);
  CHECK(space.has_gradients == 0 && space.grad_dtype == PSDP_BFLOAT16 && space.dtype == PSDP_BFLOAT16);
  CHECK(psdp_plan_free(params_only) == PSDP_SUCCESS);
}

static void test_reshard(void) {
  psdp_plan_h from = create(4, 4, PSDP_SHARD_LEVEL_GROUP, 0);
  psdp_plan_h to = create(6, 3, PSDP_SHARD_LEVEL_WORLD, 4096);
  psdp_reshard_move_t* moves;
  size_t n = 0, i, written = 0, owned = 0;
  int r;
  if (from == NULL || to == NULL) return;
  CHECK(psdp_plan_reshard_moves(from, to, NULL, 0, &n) == PSDP_SUCCESS && n > 0);
  moves = (psdp_reshard_move_t*)malloc(n * sizeof(*moves));
  CHECK(psdp_plan_reshard_moves(from, to, moves, n, &n) == PSDP_SUCCESS);
  for (i = 0; i < n; ++i) {
    CHECK(moves[i].from_rank >= 0 && moves[i].from_rank < 4 && moves[i].to_rank >= 0 && moves[i].to_rank < 6);
    written += moves[i].count;
  }
  for (r = 0; r < 6; ++r) {
    size_t count = 0;
    CHECK(psdp_plan_optimizer_state_count(to, r, &count) == PSDP_SUCCESS);
    owned += count;
  }
  CHECK(written == owned && owned == 100000 + 896);
  free(moves);
  CHECK_ERROR(psdp_plan_reshard_moves(from, NULL, NULL, 0, &n), PSDP_ERR_INVALID_ARGUMENT, NULL, "new_plan");
  psdp_plan_free(from);
  psdp_plan_free(to);
}

static void test_bad_arguments(void) {
  psdp_plan_config_t config = PSDP_PLAN_CONFIG_INITIALIZER;
  psdp_plan_h plan = NULL;
  int layout[4] = {0, 1, 2, 2};
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 4, NULL, NULL, NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "plan_p");
  CHECK_ERROR(psdp_plan_create(buffers, 0, 4, NULL, NULL, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL, "buffers");
  CHECK_ERROR(psdp_plan_create(NULL, 2, 4, NULL, NULL, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL, "buffers");
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 0, NULL, NULL, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL, "world_size");
  config.group_size = 3;
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 4, NULL, &config, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL,
              "group_size 3");
  config.group_size = 0;
  config.align_bytes = 96;
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 4, NULL, &config, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL, "align_bytes");
  config.align_bytes = 2; /* the float32 gradients need 4 */
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 4, NULL, &config, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL,
              "align_bytes 2");
  config.align_bytes = 0;
  config.level = 7;
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 4, NULL, &config, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL, "level 7");
  config.level = PSDP_SHARD_LEVEL_UNSET;
  config.magic = 0;
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 4, NULL, &config, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL, "magic");
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 4, layout, NULL, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL,
              "rank_layout[3]");
  buffers[1].name = "embed";
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 4, NULL, NULL, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL, "duplicate");
  buffers[1].name = NULL;
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 4, NULL, NULL, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL, "buffers[1]");
  make_buffers();
  buffers[2].count = 0;
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 4, NULL, NULL, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL, "count is 0");
  make_buffers();
  buffers[0].count = (size_t)1 << 63; /* and its float32 gradient: 2^65 bytes */
  buffers[2].count = (size_t)1 << 63;
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 4, NULL, NULL, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL, "overflows");
  make_buffers();
  buffers[0].role = (psdp_buffer_role_t)9;
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 4, NULL, NULL, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL, "role 9");
  make_buffers();
  CHECK(plan == NULL); /* outputs are written only on success */
  CHECK_ERROR(psdp_plan_free(NULL), PSDP_ERR_INVALID_ARGUMENT, NULL, "plan");
}

static void test_older_config(void) {
  /* A caller compiled before pad_bytes existed: the fields beyond its size are unset. */
  psdp_plan_config_t config = PSDP_PLAN_CONFIG_INITIALIZER;
  psdp_plan_h plan = NULL;
  config.size = offsetof(psdp_plan_config_t, pad_bytes);
  config.pad_bytes = 3; /* beyond the caller's struct: never read */
  CHECK(psdp_plan_create(buffers, NBUF, 2, NULL, &config, &plan) == PSDP_SUCCESS);
  if (plan != NULL) psdp_plan_free(plan);
  config.size = 8;
  CHECK_ERROR(psdp_plan_create(buffers, NBUF, 2, NULL, &config, &plan), PSDP_ERR_INVALID_ARGUMENT, NULL, "size 8");
}

int main(void) {
  make_buffers();
  test_abi();
  test_queries();
  test_spaces();
  test_reshard();
  test_bad_arguments();
  test_older_config();
  return finish_checks();
}
