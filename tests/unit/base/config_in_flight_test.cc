// PSDP_MAX_IN_FLIGHT: default, environment, caller field, bad values, an older caller's struct.
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <string>

#include "base/config.h"

namespace psdp {
namespace {

TEST(ConfigInFlightTest, DefaultIs64) {
  auto c = Config::resolve(nullptr, MapEnvironment());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c.value().max_in_flight, 64u);
}

TEST(ConfigInFlightTest, CallerFieldOverridesEnvironment) {
  psdp_config_t user = PSDP_CONFIG_INITIALIZER;
  auto from_env =
      Config::resolve(&user, MapEnvironment(std::map<std::string, std::string>{{"PSDP_MAX_IN_FLIGHT", "5"}}));
  ASSERT_TRUE(from_env.isOk()) << from_env.status().toString();
  EXPECT_EQ(from_env.value().max_in_flight, 5u);
  user.max_in_flight = 2;
  auto from_field =
      Config::resolve(&user, MapEnvironment(std::map<std::string, std::string>{{"PSDP_MAX_IN_FLIGHT", "5"}}));
  ASSERT_TRUE(from_field.isOk()) << from_field.status().toString();
  EXPECT_EQ(from_field.value().max_in_flight, 2u);
}

TEST(ConfigInFlightTest, BadValuesNameTheVariableOrField) {
  for (const char* text : {"0", "-1", "65537", "many", "4k"}) {
    auto r = Config::resolve(nullptr, MapEnvironment(std::map<std::string, std::string>{{"PSDP_MAX_IN_FLIGHT", text}}));
    ASSERT_FALSE(r.isOk()) << text;
    EXPECT_EQ(r.status().code(), PSDP_ERR_INVALID_ARGUMENT);
    EXPECT_NE(r.status().message().find("PSDP_MAX_IN_FLIGHT"), std::string::npos) << r.status().message();
  }
  psdp_config_t user = PSDP_CONFIG_INITIALIZER;
  user.max_in_flight = -3;
  auto r = Config::resolve(&user, MapEnvironment());
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("config field for PSDP_MAX_IN_FLIGHT"), std::string::npos)
      << r.status().message();
}

TEST(ConfigInFlightTest, OlderCallerStructIgnoresTheField) {
  psdp_config_t user = PSDP_CONFIG_INITIALIZER;
  user.size = offsetof(psdp_config_t, max_in_flight);
  user.max_in_flight = -77;  // beyond the caller's size: garbage that must be ignored
  auto c = Config::resolve(&user, MapEnvironment());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c.value().max_in_flight, 64u);
}

}  // namespace
}  // namespace psdp
