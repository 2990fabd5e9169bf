#include "base/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace psdp {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(LogTest, EveryLineNamesItsRankEvenWhenRanksShareAFile) {
  std::string path = "/tmp/psdp_log_test_" + std::to_string(getpid()) + ".log";
  Config config = Config::defaults();
  config.log_file = path;  // no %r: both ranks share one file sink
  config.log_level = PSDP_LOG_INFO;
  auto rank0 = makeRankLogger(0, config);
  auto rank7 = makeRankLogger(7, config);
  ASSERT_TRUE(rank0.isOk() && rank7.isOk());
  rank0.value()->info("from zero");
  rank7.value()->info("from seven");
  rank0.value()->debug("below the level");
  rank0.value()->flush();
  rank7.value()->flush();
  std::string text = readFile(path);
  unlink(path.c_str());
  EXPECT_NE(text.find("[psdp rank 0] [info] from zero"), std::string::npos) << text;
  EXPECT_NE(text.find("[psdp rank 7] [info] from seven"), std::string::npos) << text;
  EXPECT_EQ(text.find("below the level"), std::string::npos) << text;
}

TEST(LogTest, RankPlaceholderGivesEachRankItsOwnFile) {
  std::string pattern = "/tmp/psdp_log_test_" + std::to_string(getpid()) + "_%r.log";
  Config config = Config::defaults();
  config.log_file = pattern;
  auto rank3 = makeRankLogger(3, config);
  ASSERT_TRUE(rank3.isOk());
  rank3.value()->warn("rank three");
  rank3.value()->flush();
  std::string path = "/tmp/psdp_log_test_" + std::to_string(getpid()) + "_3.log";
  std::string text = readFile(path);
  unlink(path.c_str());
  EXPECT_NE(text.find("[psdp rank 3] [warning] rank three"), std::string::npos) << text;
}

TEST(LogTest, UnwritableFileIsASystemError) {
  Config config = Config::defaults();
  config.log_file = "/dev/null/psdp-%r.log";
  auto logger = makeRankLogger(1, config);
  ASSERT_FALSE(logger.isOk());
  EXPECT_EQ(logger.status().code(), PSDP_ERR_SYSTEM);
  EXPECT_NE(logger.status().message().find("/dev/null/psdp-1.log"), std::string::npos);
}

}  // namespace
}  // namespace psdp
