// psdp-perf step's command line and its traffic model, without a communicator.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "step_options.h"
#include "step_traffic.h"

namespace psdp::perf {
namespace {

bool parse(std::vector<std::string> args, StepOptions* o, std::string* error) {
  std::vector<char*> argv;
  static char name[] = "psdp-perf";
  static char step[] = "step";
  argv.push_back(name);
  argv.push_back(step);
  for (std::string& a : args) argv.push_back(a.data());
  return parseStepOptions(static_cast<int>(argv.size()), argv.data(), 2, o, error);
}

TEST(StepOptions, DefaultsAndValues) {
  StepOptions o;
  std::string error;
  ASSERT_TRUE(parse({}, &o, &error)) << error;
  EXPECT_EQ(o.model_name, "Qwen2.5-0.5B");
  EXPECT_TRUE(o.pipelined && o.bulk && o.adam);
  EXPECT_FALSE(o.bulk_chunked || o.gather_forward || o.update_during_backward);
  ASSERT_TRUE(
      parse({"--mode",         "bulk",    "--chunk-bytes", "4M",          "--group", "2",           "--level",
             "world",          "--scale", "0.5",           "--optimizer", "sgd",     "--bulk-plan", "chunked",
             "--gather-order", "forward", "--trace",       "t.json",      "-J",      "r.json",      "--per-tensor"},
            &o, &error))
      << error;
  EXPECT_FALSE(o.pipelined);
  EXPECT_TRUE(o.bulk && o.world_level && o.bulk_chunked && o.gather_forward && o.per_tensor);
  EXPECT_FALSE(o.adam);
  EXPECT_EQ(o.chunk_bytes, size_t{4} << 20);
  EXPECT_EQ(o.group, 2);
  EXPECT_DOUBLE_EQ(o.scale, 0.5);
  EXPECT_EQ(o.trace_path, "t.json");
  EXPECT_EQ(o.json_path, "r.json");
  EXPECT_FALSE(o.mixed || o.bf16_partials);
  ASSERT_TRUE(parse({"--precision", "bf16", "--partials", "bf16"}, &o, &error)) << error;
  EXPECT_TRUE(o.mixed && o.bf16_partials);
  // The engine's settings: 2 and 1 unless given; 0 leaves them to the tuning file's engine rule.
  EXPECT_EQ(o.window, 2u);
  EXPECT_EQ(o.grouping, 1u);
  ASSERT_TRUE(parse({"--window", "0", "--grouping", "4"}, &o, &error)) << error;
  EXPECT_EQ(o.window, 0u);
  EXPECT_EQ(o.grouping, 4u);
}

TEST(StepOptions, BadValuesNameTheOption) {
  const std::vector<std::vector<std::string>> bad = {{"--scale", "0"},           {"--scale", "2"},
                                                     {"--window", "x"},          {"--mode", "fast"},
                                                     {"--level", "x"},           {"--optimizer", "lamb"},
                                                     {"--bytes", "2"},           {"--iters", "0"},
                                                     {"--group", "-1"},          {"--bulk-plan", "some"},
                                                     {"--gather-order", "both"}, {"--frobnicate"},
                                                     {"--chunk-bytes"},          {"--bytes", "1M", "--model", "m.json"},
                                                     {"--precision", "fp8"},     {"--partials", "fp16"},
                                                     {"--partials", "bf16"},     {"--grouping", "-2"}};
  for (const auto& args : bad) {
    StepOptions o;
    std::string error;
    EXPECT_FALSE(parse(args, &o, &error)) << args[0];
    EXPECT_NE(error.find(args[0] == "--bytes" && args.size() > 2 ? "--bytes and --model" : args[0]), std::string::npos)
        << error;
  }
}

// One parameter of 2^20 floats over 2 ranks, G = 2: four chunks of 1 MiB (pieces of 512 KiB), or one of 4 MiB.
psdp_plan_h planOf(size_t chunk_bytes) {
  psdp_buffer_desc_t descs[2] = {
      {"w", nullptr, size_t{1} << 20, PSDP_FLOAT32, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0},
      {"w.grad", nullptr, size_t{1} << 20, PSDP_FLOAT32, PSDP_BUFFER_GRADIENT, PSDP_MEMORY_HOST, 0}};
  psdp_plan_config_t config = PSDP_PLAN_CONFIG_INITIALIZER;
  config.group_size = 2;
  config.chunk_bytes = chunk_bytes;
  psdp_plan_h plan = nullptr;
  EXPECT_EQ(psdp_plan_create(descs, 2, 2, nullptr, &config, &plan), PSDP_SUCCESS);
  return plan;
}

TEST(StepTraffic, PassesAndCache) {
  constexpr double MiB = 1 << 20;
  StepTrafficParams p;
  p.group = 2;
  p.ranks_on_host = 2;
  p.window_chunks = 4;
  p.cache_bytes = size_t{64} << 20;
  p.parameter_counts = {size_t{1} << 20};
  psdp_plan_h chunked = planOf(size_t{1} << 20), whole = planOf(size_t{1} << 30);
  // Per 1 MiB chunk (n = 1 MiB, b = o = 0.5 MiB): writes 1 + 0.5 + 3 x 0.5 + 0.5 = 3.5 MiB; reads of what a
  // plain store just wrote 2 x 0.5 + 0.5 = 1.5 MiB (cached here), the update's 4 x 0.5 = 2 MiB.
  const StepTraffic pipelined = stepTraffic(chunked, p, true);
  EXPECT_EQ(pipelined.chunks, 4u);
  EXPECT_EQ(pipelined.chunks_cached, 4u);
  EXPECT_EQ(pipelined.chunks_packed, 0u);
  EXPECT_DOUBLE_EQ(pipelined.dram, 4 * 5.5 * MiB);
  EXPECT_DOUBLE_EQ(pipelined.sent_inside, 4 * 2 * 0.5 * MiB);
  EXPECT_DOUBLE_EQ(pipelined.sent_across, 0);
  // Bulk on one chunk of the whole buffer, in place: every read from DRAM.
  const StepTraffic bulk = stepTraffic(whole, p, false);
  EXPECT_EQ(bulk.chunks, 1u);
  EXPECT_EQ(bulk.chunks_cached, 0u);
  EXPECT_EQ(bulk.chunks_packed, 0u);
  EXPECT_DOUBLE_EQ(bulk.dram, 4 * 7 * MiB);
  // Bulk on the chunked plan packs each chunk: 2 n + 2 o more written, as much read.
  const StepTraffic packed = stepTraffic(chunked, p, false);
  EXPECT_EQ(packed.chunks_packed, 4u);
  EXPECT_DOUBLE_EQ(packed.dram, 4 * (7 + 2 * 3) * MiB);
  // A cache too small for the chunks in flight: no read counts as cached.
  p.cache_bytes = size_t{4} << 20;
  EXPECT_DOUBLE_EQ(stepTraffic(chunked, p, true).dram, 4 * 7 * MiB);
  // Mixed precision on the same elements (e = 2, float32 partial sums w = 4, state f = 4), per chunk of
  // n = 1/4 Mi elements (b = o = 1/8 Mi), in MiB: writes backward n e 0.5, reduce b w 0.5, update (1 + s) o f
  // + o e 1.75, gather b e 0.25, pack n w 1, store o f 0.5: 4.5; reads cold: update (2 + s) o f 2, store o w
  // 0.5; hot (the cache is too small): reduce G b w 1, gather b e 0.25, pack n e 0.5. 8.75 in all.
  p.elem_bytes = 2;
  p.wire_bytes = 4;
  p.gradient_shard = true;
  const StepTraffic mixed = stepTraffic(chunked, p, true);
  EXPECT_EQ(mixed.chunks_packed, 4u) << "widened partial sums never reduce in place";
  EXPECT_DOUBLE_EQ(mixed.dram, 4 * 8.75 * MiB);
  EXPECT_DOUBLE_EQ(mixed.sent_inside, 4 * 0.125 * (4 + 2) * MiB);
  psdp_plan_free(chunked);
  psdp_plan_free(whole);
}

}  // namespace
}  // namespace psdp::perf
