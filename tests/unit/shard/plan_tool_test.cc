// psdp-plan's parts (tools/plan): the JSON reader, the shape file loader against the Qwen2.5 fixture, the
// options, and the two baselines on shapes small enough to work out by hand.
#include <gtest/gtest.h>

#include <numeric>
#include <sstream>

#include "json_reader.h"
#include "model_shapes.h"
#include "plan_fixtures.h"
#include "plan_options.h"
#include "plan_output.h"
#include "plan_report.h"

namespace psdp::tools {
namespace {

TEST(JsonReaderTest, ReadsTheShapesOfAShapeFile) {
  std::string error;
  auto doc = parseJson(R"( {"a": [1, 22, 333], "b": {"s": "x\"y\\n", "t": true, "f": false, "n": null}} )", &error);
  ASSERT_TRUE(doc) << error;
  ASSERT_EQ(doc->find("a")->items.size(), 3u);
  EXPECT_EQ(doc->find("a")->items[2].asUint(), 333u);
  EXPECT_EQ(doc->find("b")->find("s")->text, "x\"y\\n");
  EXPECT_TRUE(doc->find("b")->find("t")->boolean);
  EXPECT_FALSE(doc->find("b")->find("f")->boolean);
  EXPECT_EQ(doc->find("b")->find("n")->kind, JsonValue::Kind::kNull);
  EXPECT_EQ(doc->find("missing"), nullptr);
  EXPECT_FALSE(parseJson("-1", &error)->asUint());
  EXPECT_EQ(parseJson("18446744073709551615", &error)->asUint(), ~uint64_t{0});
}

TEST(JsonReaderTest, ReportsWhereItFails) {
  std::string error;
  EXPECT_FALSE(parseJson(R"({"a": [1, 2})", &error));
  EXPECT_EQ(error, "offset 11: expected ',' or ']'");
  EXPECT_FALSE(parseJson(R"({"a" 1})", &error));
  EXPECT_EQ(error, "offset 5: expected ':'");
  EXPECT_FALSE(parseJson("[1] x", &error));
  EXPECT_FALSE(parseJson(std::string(100, '['), &error));
  EXPECT_NE(error.find("less nesting"), std::string::npos);
  EXPECT_FALSE(parseJson("\"open", &error));
}

// The shipped shape file and the fixture regenerated from each model's config agree tensor by tensor.
TEST(ModelShapesTest, QwenFileMatchesTheFixture) {
  for (const shard::testing::QwenModel& m : shard::testing::qwenModels()) {
    std::string error;
    auto shapes = loadModelShapes(PSDP_TEST_DATA_DIR "/qwen2.5.json", m.name, &error);
    ASSERT_TRUE(shapes) << error;
    const std::vector<shard::BufferDesc> expected = shard::testing::qwenParameters(m, false);
    ASSERT_EQ(shapes->tensors.size(), expected.size()) << m.name;
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(shapes->tensors[i].name, expected[i].name);
      EXPECT_EQ(shapes->tensors[i].numel, expected[i].count) << expected[i].name;
    }
  }
}

TEST(ModelShapesTest, NamesTheProblem) {
  std::string error;
  EXPECT_FALSE(loadModelShapes(PSDP_TEST_DATA_DIR "/qwen2.5.json", "", &error));
  EXPECT_NE(error.find("several models"), std::string::npos) << error;
  EXPECT_FALSE(loadModelShapes(PSDP_TEST_DATA_DIR "/qwen2.5.json", "Qwen9", &error));
  EXPECT_NE(error.find("no model 'Qwen9'"), std::string::npos) << error;
  EXPECT_FALSE(loadModelShapes("/nonexistent.json", "", &error));
  EXPECT_FALSE(parseModelShapes(R"({"tensors": [{"name": "w", "shape": [4, 0]}]})", "", &error));
  EXPECT_NE(error.find("tensors[0] 'w'"), std::string::npos) << error;
  auto one = parseModelShapes(R"({"tensors": [{"name": "w", "shape": [4, 3]}]})", "", &error);
  ASSERT_TRUE(one) << error;
  EXPECT_EQ(one->tensors[0].numel, 12u);
}

TEST(PlanOptionsTest, ParsesAndRejects) {
  std::string error;
  auto cmd = parsePlanCommand({"--model", "m.json", "--world", "16", "--group", "4", "--chunk", "4M", "--align", "512",
                               "--level", "world", "--grad-dtype", "none", "--json"},
                              &error);
  ASSERT_TRUE(cmd) << error;
  EXPECT_EQ(cmd->plan.world_size, 16);
  EXPECT_EQ(cmd->plan.group_size, 4);
  EXPECT_EQ(cmd->plan.chunk_bytes, 4u << 20);
  EXPECT_EQ(cmd->plan.align_bytes, 512u);
  EXPECT_EQ(cmd->plan.levels, std::vector<psdp_shard_level_t>{PSDP_SHARD_LEVEL_WORLD});
  EXPECT_FALSE(cmd->plan.with_grads);
  EXPECT_TRUE(cmd->json);
  EXPECT_FALSE(parsePlanCommand({"--model", "m.json"}, &error));
  EXPECT_FALSE(parsePlanCommand({"--model", "m.json", "--world", "x"}, &error));
  EXPECT_EQ(error, "bad value 'x' for --world");
  EXPECT_FALSE(parsePlanCommand({"--model", "m.json", "--world", "2", "--level", "all"}, &error));
  EXPECT_FALSE(parsePlanCommand({"--model", "m.json", "--world", "2", "--frobnicate", "1"}, &error));
  EXPECT_EQ(error, "unknown option --frobnicate");
}

const SchemeReport& find(const PlanReport& report, const std::string& scheme, const std::string& level) {
  for (const SchemeReport& s : report.schemes) {
    if (s.scheme == scheme && s.level == level) return s;
  }
  static const SchemeReport none;
  ADD_FAILURE() << scheme << "/" << level << " missing";
  return none;
}

TEST(PlanReportTest, BaselinesByHand) {
  // Tensors of 10x100, 7x100, 300 and 5 elements over 4 ranks in one group.
  ModelShapes model{"tiny", {{"a", {10, 100}, 1000}, {"b", {7, 100}, 700}, {"c", {300}, 300}, {"d", {5}, 5}}};
  PlanOptions options;
  options.world_size = 4;
  options.align_bytes = 4;
  options.levels = {PSDP_SHARD_LEVEL_GROUP};
  PlanReport report;
  std::string error;
  ASSERT_TRUE(buildPlanReport(model, options, &report, &error)) << error;
  EXPECT_EQ(report.parameters, 2005u);
  // Greedy largest first: a -> 0, b -> 1, c -> 2, d -> 3.
  EXPECT_EQ(find(report, "zero", "group").owned, (std::vector<uint64_t>{1000, 700, 300, 5}));
  // dim 0 in ceil(d0/4) rows: 3x100 + 2x100 + 75 + 2 on every rank; padding 200 + 100 + 0 + 3.
  EXPECT_EQ(find(report, "fsdp2", "group").owned, (std::vector<uint64_t>(4, 577)));
  EXPECT_EQ(find(report, "fsdp2", "group").padding, 303u);
  // psdp: float32 gradients, u = 1 element: 2005 = 501 + 501 + 501 + 502.
  const SchemeReport& psdp = find(report, "psdp", "group");
  EXPECT_EQ(std::accumulate(psdp.owned.begin(), psdp.owned.end(), uint64_t{0}), 2005u);
  EXPECT_EQ(psdp.maxOwned(), 502u);
  EXPECT_NE(report.plan_hash, 0u);
  std::ostringstream text, json;
  PlanCommand cmd;
  cmd.plan = options;
  printPlanText(report, cmd, text);
  printPlanJson(report, cmd, json);
  EXPECT_NE(text.str().find("zero    group  4"), std::string::npos) << text.str();
  EXPECT_NE(json.str().find("\"state_bytes_per_rank\": [12000, 8400, 3600, 60]"), std::string::npos) << json.str();
}

TEST(PlanReportTest, PlannerErrorsComeThrough) {
  ModelShapes model{"tiny", {{"a", {10}, 10}}};
  PlanOptions options;
  options.world_size = 4;
  options.group_size = 3;
  PlanReport report;
  std::string error;
  EXPECT_FALSE(buildPlanReport(model, options, &report, &error));
  EXPECT_NE(error.find("group_size 3"), std::string::npos) << error;
}

}  // namespace
}  // namespace psdp::tools
