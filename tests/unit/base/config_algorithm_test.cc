// PSDP_ALGORITHM and PSDP_DETERMINISTIC: defaults, environment, caller fields, bad values, older structs.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/config.h"

namespace psdp {
namespace {

TEST(ConfigAlgorithmTest, DefaultsAreAutoAndNotDeterministic) {
  auto c = Config::resolve(nullptr, MapEnvironment());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c.value().algorithm, PSDP_ALGORITHM_AUTO);
  EXPECT_FALSE(c.value().deterministic);
}

TEST(ConfigAlgorithmTest, EnvironmentSetsBoth) {
  for (auto [text, algorithm] : {std::pair{"auto", PSDP_ALGORITHM_AUTO}, std::pair{"ring", PSDP_ALGORITHM_RING},
                                 std::pair{"rhd", PSDP_ALGORITHM_RHD}, std::pair{"direct", PSDP_ALGORITHM_DIRECT}}) {
    auto c = Config::resolve(nullptr, MapEnvironment({{"PSDP_ALGORITHM", text}, {"PSDP_DETERMINISTIC", "1"}}));
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    EXPECT_EQ(c.value().algorithm, algorithm) << text;
    EXPECT_TRUE(c.value().deterministic);
  }
}

TEST(ConfigAlgorithmTest, AnUnknownNameListsEveryAlgorithm) {
  auto r = Config::resolve(nullptr, MapEnvironment(std::map<std::string, std::string>{{"PSDP_ALGORITHM", "tree"}}));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  for (const char* name : {"auto", "ring", "rhd", "direct"}) {
    EXPECT_NE(r.status().message().find(name), std::string::npos) << r.status().message();
  }
}

TEST(ConfigAlgorithmTest, CallerFieldsOverrideEnvironment) {
  psdp_config_t user = PSDP_CONFIG_INITIALIZER;
  user.algorithm = PSDP_ALGORITHM_RING;
  user.deterministic = 0;
  auto c = Config::resolve(&user, MapEnvironment({{"PSDP_ALGORITHM", "rhd"}, {"PSDP_DETERMINISTIC", "1"}}));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c.value().algorithm, PSDP_ALGORITHM_RING);
  EXPECT_FALSE(c.value().deterministic);
}

TEST(ConfigAlgorithmTest, UnsetFieldsTakeTheEnvironment) {
  psdp_config_t user = PSDP_CONFIG_INITIALIZER;
  auto c = Config::resolve(&user, MapEnvironment({{"PSDP_ALGORITHM", "rhd"}, {"PSDP_DETERMINISTIC", "1"}}));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c.value().algorithm, PSDP_ALGORITHM_RHD);
  EXPECT_TRUE(c.value().deterministic);
}

TEST(ConfigAlgorithmTest, OlderCallerStructIgnoresTheNewFields) {
  psdp_config_t user = PSDP_CONFIG_INITIALIZER;
  user.size = offsetof(psdp_config_t, algorithm);
  user.algorithm = 77;  // beyond the caller's size: garbage that must be ignored
  user.deterministic = 77;
  auto c = Config::resolve(&user, MapEnvironment());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c.value().algorithm, PSDP_ALGORITHM_AUTO);
  EXPECT_FALSE(c.value().deterministic);
}

TEST(ConfigAlgorithmTest, BadValuesNameTheVariableOrField) {
  for (auto [env, value] : {std::pair{"PSDP_ALGORITHM", "tree"}, std::pair{"PSDP_ALGORITHM", ""},
                            std::pair{"PSDP_DETERMINISTIC", "yes"}, std::pair{"PSDP_DETERMINISTIC", "2"}}) {
    auto r = Config::resolve(nullptr, MapEnvironment(std::map<std::string, std::string>{{env, value}}));
    ASSERT_FALSE(r.isOk()) << env << "=" << value;
    EXPECT_EQ(r.status().code(), PSDP_ERR_INVALID_ARGUMENT);
    EXPECT_NE(r.status().message().find(env), std::string::npos) << r.status().message();
  }
  psdp_config_t user = PSDP_CONFIG_INITIALIZER;
  user.algorithm = 9;
  auto r = Config::resolve(&user, MapEnvironment());
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("PSDP_ALGORITHM"), std::string::npos) << r.status().message();
  user = PSDP_CONFIG_INITIALIZER;
  user.deterministic = 3;
  r = Config::resolve(&user, MapEnvironment());
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("PSDP_DETERMINISTIC"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace psdp
