#include "base/config.h"

#include <gtest/gtest.h>

namespace psdp {
namespace {

const ParamSpec& spec(const char* env) {
  for (const ParamSpec& p : params()) {
    if (std::string(p.env) == env) return p;
  }
  ADD_FAILURE() << "no parameter " << env;
  return params()[0];
}

MapEnvironment envOf(std::map<std::string, std::string> vars) {
  return MapEnvironment(std::move(vars));
}

size_t indexOf(const char* env) {
  return &spec(env) - params().data();
}

TEST(ConfigTest, DefaultsComeFromTheTable) {
  auto c = Config::resolve(nullptr, MapEnvironment());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c.value().timeout_s, 600);
  EXPECT_EQ(c.value().fragment_bytes, size_t{1} << 20);
  EXPECT_EQ(c.value().log_level, PSDP_LOG_WARN);
  EXPECT_EQ(c.value().progress_mode, PSDP_PROGRESS_THREAD);
  EXPECT_EQ(c.value().port_range.lo, 29600);
  EXPECT_EQ(c.value().port_range.hi, 29699);
  for (size_t i = 0; i < params().size(); ++i) EXPECT_EQ(c.value().sources[i], ParamSource::kDefault);
}

TEST(ConfigTest, EnvironmentOverridesDefault) {
  MapEnvironment env({{"PSDP_TIMEOUT", "2.5"},
                      {"PSDP_FRAGMENT_BYTES", "64K"},
                      {"PSDP_LOG_LEVEL", "debug"},
                      {"PSDP_PORT_RANGE", "40000-40010"},
                      {"PSDP_PROGRESS", "caller"}});
  auto c = Config::resolve(nullptr, env);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c.value().timeout_s, 2.5);
  EXPECT_EQ(c.value().fragment_bytes, 64u << 10);
  EXPECT_EQ(c.value().log_level, PSDP_LOG_DEBUG);
  EXPECT_EQ(c.value().port_range.lo, 40000);
  EXPECT_EQ(c.value().progress_mode, PSDP_PROGRESS_CALLER);
  EXPECT_EQ(c.value().sources[indexOf("PSDP_TIMEOUT")], ParamSource::kEnv);
  EXPECT_EQ(c.value().sources[indexOf("PSDP_LOG_FILE")], ParamSource::kDefault);
}

TEST(ConfigTest, CallerFieldOverridesEnvironment) {
  psdp_config_t user = PSDP_CONFIG_INITIALIZER;
  user.timeout_s = 7;
  user.log_file = "/tmp/psdp-%r.log";
  MapEnvironment env({{"PSDP_TIMEOUT", "3"}, {"PSDP_LOG_FILE", "/other"}, {"PSDP_FRAGMENT_BYTES", "4096"}});
  auto c = Config::resolve(&user, env);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c.value().timeout_s, 7);
  EXPECT_EQ(c.value().log_file, "/tmp/psdp-%r.log");
  EXPECT_EQ(c.value().fragment_bytes, 4096u);  // unset in the struct: the environment wins over the default
  EXPECT_EQ(c.value().sources[indexOf("PSDP_TIMEOUT")], ParamSource::kConfig);
  EXPECT_EQ(c.value().sources[indexOf("PSDP_FRAGMENT_BYTES")], ParamSource::kEnv);
}

// A renamed variable is still read under its old name, and the new name wins when both are set.
TEST(ConfigTest, RenamedVariableStillWorks) {
  auto old_only = Config::resolve(nullptr, envOf({{"PSDP_CHUNK_BYTES", "64K"}}));
  ASSERT_TRUE(old_only.isOk()) << old_only.status().toString();
  EXPECT_EQ(old_only.value().fragment_bytes, 64u << 10);
  EXPECT_EQ(old_only.value().sources[indexOf("PSDP_FRAGMENT_BYTES")], ParamSource::kEnv);

  auto both = Config::resolve(nullptr, envOf({{"PSDP_CHUNK_BYTES", "64K"}, {"PSDP_FRAGMENT_BYTES", "8K"}}));
  ASSERT_TRUE(both.isOk()) << both.status().toString();
  EXPECT_EQ(both.value().fragment_bytes, 8u << 10);

  auto bad = Config::resolve(nullptr, envOf({{"PSDP_CHUNK_BYTES", "12Q"}}));
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().toString().find("PSDP_CHUNK_BYTES"), std::string::npos) << bad.status().toString();
}

TEST(ConfigTest, OlderCallerStructIsBackfilled) {
  // A caller compiled when psdp_config_t ended before log_level: later fields must not be read.
  psdp_config_t user = PSDP_CONFIG_INITIALIZER;
  user.size = offsetof(psdp_config_t, log_level);
  user.fragment_bytes = 8192;
  user.log_level = 12345;  // beyond the caller's size: garbage that must be ignored
  user.progress_mode = 999;
  auto c = Config::resolve(&user, envOf({{"PSDP_LOG_LEVEL", "info"}}));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c.value().fragment_bytes, 8192u);
  EXPECT_EQ(c.value().log_level, PSDP_LOG_INFO);
  EXPECT_EQ(c.value().progress_mode, PSDP_PROGRESS_THREAD);
}

TEST(ConfigTest, BadValuesNameTheVariableOrField) {
  struct Case {
    const char* env;
    const char* value;
  } cases[] = {{"PSDP_TIMEOUT", "soon"},       {"PSDP_TIMEOUT", "-1"},        {"PSDP_TIMEOUT", "0"},
               {"PSDP_FRAGMENT_BYTES", "12Q"}, {"PSDP_FRAGMENT_BYTES", "16"}, {"PSDP_FRAGMENT_BYTES", "99999999999G"},
               {"PSDP_LOG_LEVEL", "loud"},     {"PSDP_PORT_RANGE", "9-1"},    {"PSDP_PORT_RANGE", "0-10"},
               {"PSDP_PORT_RANGE", "1-70000"}, {"PSDP_PROGRESS", "spin"}};
  for (const Case& c : cases) {
    auto r = Config::resolve(nullptr, envOf({{c.env, c.value}}));
    ASSERT_FALSE(r.isOk()) << c.env << "=" << c.value;
    EXPECT_EQ(r.status().code(), PSDP_ERR_INVALID_ARGUMENT);
    EXPECT_NE(r.status().message().find(c.env), std::string::npos) << r.status().message();
  }
  psdp_config_t user = PSDP_CONFIG_INITIALIZER;
  user.log_level = 42;
  auto r = Config::resolve(&user, MapEnvironment());
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("config field for PSDP_LOG_LEVEL"), std::string::npos) << r.status().message();
}

TEST(ConfigTest, UninitialisedStructIsRejected) {
  psdp_config_t user{};
  auto r = Config::resolve(&user, MapEnvironment());
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(r.status().message().find("PSDP_CONFIG_INITIALIZER"), std::string::npos);
}

TEST(ConfigTest, ParseBytes) {
  EXPECT_EQ(parseBytes("0").value(), 0u);
  EXPECT_EQ(parseBytes("512").value(), 512u);
  EXPECT_EQ(parseBytes("4k").value(), 4096u);
  EXPECT_EQ(parseBytes("3M").value(), 3u << 20);
  EXPECT_EQ(parseBytes("2G").value(), size_t{2} << 30);
  EXPECT_FALSE(parseBytes("").isOk());
  EXPECT_FALSE(parseBytes("M").isOk());
  EXPECT_FALSE(parseBytes("-1").isOk());
  EXPECT_FALSE(parseBytes("1.5M").isOk());
  EXPECT_FALSE(parseBytes("17179869184G").isOk());
}

TEST(ConfigTest, EveryParameterIsDocumented) {
  for (const ParamSpec& p : params()) {
    EXPECT_EQ(std::string(p.env).rfind("PSDP_", 0), 0u) << p.env;
    EXPECT_GT(std::string(p.help).size(), 20u) << p.env;
    EXPECT_NE(p.type, nullptr);
  }
}

// The mapper's inputs: PCI bus ids as CUDA and lspci print them come out in one form; anything else is
// refused naming the value.
TEST(ConfigTest, GpuBusIdIsNormalised) {
  const std::pair<const char*, const char*> good[] = {{"0000:17:00.0", "0000:17:00.0"},
                                                      {"00000000:17:00.0", "0000:17:00.0"},
                                                      {"17:00.0", "0000:17:00.0"},
                                                      {"0001:AB:1F.7", "0001:ab:1f.7"},
                                                      {"", ""}};
  for (auto [in, out] : good) {
    auto c = Config::resolve(nullptr, envOf({{"PSDP_GPU_BUS_ID", in}}));
    ASSERT_TRUE(c.isOk()) << in << ": " << c.status().toString();
    EXPECT_EQ(c.value().gpu_bus_id, out) << in;
  }
  for (const char* bad : {"17", "17:00", "zz:00.0", "0000:17:00.8", "0000:17:20.0", "0000:17:00.0x", " 17:00.0",
                          "000000000:17:00.0", "0:0:0:0.0"}) {
    auto c = Config::resolve(nullptr, envOf({{"PSDP_GPU_BUS_ID", bad}}));
    ASSERT_FALSE(c.isOk()) << bad;
    EXPECT_NE(c.status().message().find("PSDP_GPU_BUS_ID"), std::string::npos) << c.status().message();
  }
  psdp_config_t user = PSDP_CONFIG_INITIALIZER;
  user.host_id = "rack3-node7";
  user.topo_file = "/etc/psdp/topo.xml";
  auto c = Config::resolve(&user, envOf({{"PSDP_HOST_ID", "ignored"}}));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c.value().host_id, "rack3-node7");
  EXPECT_EQ(c.value().topo_file, "/etc/psdp/topo.xml");
  EXPECT_FALSE(Config::resolve(nullptr, envOf({{"PSDP_HOST_ID", std::string(256, 'h')}})).isOk());
}

}  // namespace
}  // namespace psdp
