#include "core/launcher_env.h"

#include <gtest/gtest.h>

namespace psdp::core {
namespace {

const std::string kHex = "00112233445566778899aabbccddeeff";

Config config() {
  return Config::defaults();
}

Result<LaunchInfo> parse(std::map<std::string, std::string> vars, const Config& cfg = config()) {
  return launchInfoFromEnv(MapEnvironment(std::move(vars)), cfg);
}

// The error is invalid argument and mentions every one of `words`.
void expectError(const Result<LaunchInfo>& r, std::initializer_list<const char*> words) {
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  for (const char* w : words) EXPECT_NE(r.status().message().find(w), std::string::npos) << r.status().message();
}

std::map<std::string, std::string> psdpVars() {
  return {
      {"PSDP_RANK", "2"}, {"PSDP_WORLD_SIZE", "4"}, {"PSDP_ROOT_ADDR", "10.0.0.1:29650"}, {"PSDP_JOB_SECRET", kHex}};
}

TEST(LauncherEnvTest, Psdp) {
  auto r = parse(psdpVars());
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value().launcher, "psdp");
  EXPECT_EQ(r.value().rank, 2);
  EXPECT_EQ(r.value().nranks, 4);
  EXPECT_EQ(r.value().id.host, "10.0.0.1");
  EXPECT_EQ(r.value().id.port, 29650);
  EXPECT_EQ(secretToHex(r.value().id.secret), kHex);
  EXPECT_FALSE(r.value().secret_derived);
}

TEST(LauncherEnvTest, PsdpRootAddrForms) {
  auto vars = psdpVars();
  vars["PSDP_ROOT_ADDR"] = "10.0.0.1";  // no port: scan PSDP_PORT_RANGE
  auto r = parse(vars);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value().id.port, 0);
  vars["PSDP_ROOT_ADDR"] = "[::1]:7";
  r = parse(vars);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value().id.host, "::1");
  EXPECT_EQ(r.value().id.port, 7);
  vars["PSDP_ROOT_ADDR"] = "fd00::5";
  r = parse(vars);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value().id.host, "fd00::5");
  EXPECT_EQ(r.value().id.port, 0);
  vars["PSDP_ROOT_ADDR"] = "localhost:1234";  // a name resolves to a numeric address
  r = parse(vars);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_TRUE(r.value().id.host == "127.0.0.1" || r.value().id.host == "::1") << r.value().id.host;
}

TEST(LauncherEnvTest, PsdpMissingAndMalformed) {
  for (const char* var : {"PSDP_WORLD_SIZE", "PSDP_ROOT_ADDR", "PSDP_JOB_SECRET"}) {
    auto vars = psdpVars();
    vars.erase(var);
    expectError(parse(vars), {var, "psdp"});
  }
  struct Case {
    const char* var;
    const char* value;
  };
  for (Case c : {Case{"PSDP_RANK", "x"}, Case{"PSDP_RANK", "-1"}, Case{"PSDP_RANK", "4"}, Case{"PSDP_RANK", " 1"},
                 Case{"PSDP_RANK", "1e2"}, Case{"PSDP_WORLD_SIZE", "0"}, Case{"PSDP_WORLD_SIZE", "99999999999"},
                 Case{"PSDP_ROOT_ADDR", "10.0.0.1:"}, Case{"PSDP_ROOT_ADDR", "10.0.0.1:70000"},
                 Case{"PSDP_ROOT_ADDR", ":5"}, Case{"PSDP_ROOT_ADDR", "[::1"}, Case{"PSDP_ROOT_ADDR", "[::1]x"},
                 Case{"PSDP_ROOT_ADDR", "no-such-host.invalid:5"}, Case{"PSDP_JOB_SECRET", "abc"}}) {
    auto vars = psdpVars();
    vars[c.var] = c.value;
    expectError(parse(vars), {c.var});
  }
}

TEST(LauncherEnvTest, SecretValueIsNeverEchoed) {
  auto vars = psdpVars();
  vars["PSDP_JOB_SECRET"] = "deadbeefdeadbeefdeadbeefdeadbeeZ";
  auto r = parse(vars);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message().find("deadbeef"), std::string::npos) << r.status().message();
}

TEST(LauncherEnvTest, Torchrun) {
  std::map<std::string, std::string> vars = {{"RANK", "1"},
                                             {"WORLD_SIZE", "8"},
                                             {"MASTER_ADDR", "10.0.0.9"},
                                             {"MASTER_PORT", "29500"},
                                             {"TORCHELASTIC_RUN_ID", "job-42"}};
  auto r = parse(vars);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value().launcher, "torchrun");
  EXPECT_EQ(r.value().rank, 1);
  EXPECT_EQ(r.value().nranks, 8);
  EXPECT_EQ(r.value().id.host, "10.0.0.9");
  EXPECT_EQ(r.value().id.port, 0) << "MASTER_PORT belongs to torchrun's store";
  EXPECT_TRUE(r.value().secret_derived);
  EXPECT_EQ(r.value().id.secret, deriveJobSecret("torchrun", "job-42"));

  vars["PSDP_ROOT_ADDR"] = "10.0.0.200:29700";  // only its port counts under torchrun
  vars["PSDP_JOB_SECRET"] = kHex;
  r = parse(vars);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value().id.host, "10.0.0.9");
  EXPECT_EQ(r.value().id.port, 29700);
  EXPECT_FALSE(r.value().secret_derived);
  EXPECT_EQ(secretToHex(r.value().id.secret), kHex);
}

TEST(LauncherEnvTest, TorchrunMissing) {
  std::map<std::string, std::string> base = {
      {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.9"}, {"TORCHELASTIC_RUN_ID", "x"}};
  for (const char* var : {"WORLD_SIZE", "MASTER_ADDR"}) {
    auto vars = base;
    vars.erase(var);
    expectError(parse(vars), {var, "torchrun"});
  }
  auto vars = base;
  vars.erase("TORCHELASTIC_RUN_ID");
  expectError(parse(vars), {"PSDP_JOB_SECRET", "TORCHELASTIC_RUN_ID", "torchrun"});
  vars = base;
  vars["PSDP_ROOT_ADDR"] = "10.0.0.1:x";
  expectError(parse(vars), {"PSDP_ROOT_ADDR", "torchrun"});
  Config no_range = config();
  no_range.port_range = PortRange{};
  expectError(parse(base, no_range), {"PSDP_PORT_RANGE"});
}

TEST(LauncherEnvTest, OpenMpi) {
  std::map<std::string, std::string> vars = {{"OMPI_COMM_WORLD_RANK", "3"},
                                             {"OMPI_COMM_WORLD_SIZE", "4"},
                                             {"PSDP_ROOT_ADDR", "10.0.0.1:29650"},
                                             {"PMIX_NAMESPACE", "prterun-host-1234@1"},
                                             {"OMPI_MCA_ess_base_jobid", "99"}};
  auto r = parse(vars);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value().launcher, "openmpi");
  EXPECT_EQ(r.value().rank, 3);
  EXPECT_EQ(r.value().nranks, 4);
  EXPECT_TRUE(r.value().secret_derived);
  EXPECT_EQ(r.value().id.secret, deriveJobSecret("openmpi", "prterun-host-1234@1"));
  vars["OMPI_MCA_orte_hnp_uri"] = "1234.0;tcp://10.0.0.1:5000";  // preferred when present
  r = parse(vars);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r.value().id.secret, deriveJobSecret("openmpi", "1234.0;tcp://10.0.0.1:5000"));

  vars.erase("PSDP_ROOT_ADDR");
  expectError(parse(vars), {"PSDP_ROOT_ADDR is required under Open MPI"});
  vars = {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}, {"PSDP_ROOT_ADDR", "10.0.0.1:1"}};
  expectError(parse(vars), {"PSDP_JOB_SECRET", "PMIX_NAMESPACE", "Open MPI"});
  vars["OMPI_COMM_WORLD_SIZE"] = "zero";
  expectError(parse(vars), {"OMPI_COMM_WORLD_SIZE", "Open MPI"});
}

TEST(LauncherEnvTest, Slurm) {
  std::map<std::string, std::string> vars = {{"SLURM_PROCID", "5"},
                                             {"SLURM_NTASKS", "6"},
                                             {"PSDP_ROOT_ADDR", "10.0.0.1"},
                                             {"SLURM_JOB_ID", "777"},
                                             {"SLURM_STEP_ID", "2"}};
  auto r = parse(vars);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value().launcher, "slurm");
  EXPECT_EQ(r.value().rank, 5);
  EXPECT_EQ(r.value().nranks, 6);
  EXPECT_EQ(r.value().id.port, 0);
  EXPECT_TRUE(r.value().secret_derived);
  EXPECT_EQ(r.value().id.secret, deriveJobSecret("slurm", "777.2"));

  vars.erase("SLURM_NTASKS");
  vars["SLURM_NPROCS"] = "6";  // older Slurm
  r = parse(vars);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value().nranks, 6);
  vars.erase("SLURM_NPROCS");
  expectError(parse(vars), {"SLURM_NTASKS", "Slurm"});
  vars["SLURM_NTASKS"] = "6";
  vars.erase("SLURM_STEP_ID");
  expectError(parse(vars), {"PSDP_JOB_SECRET", "SLURM_JOB_ID + SLURM_STEP_ID", "Slurm"});
  vars["SLURM_PROCID"] = "6";
  expectError(parse(vars), {"SLURM_PROCID", "SLURM_NTASKS"});
}

TEST(LauncherEnvTest, LauncherOrder) {
  // torchrun inside a Slurm allocation: torchrun's RANK is the global rank.
  auto r = parse({{"RANK", "1"},
                  {"WORLD_SIZE", "2"},
                  {"MASTER_ADDR", "10.0.0.1"},
                  {"TORCHELASTIC_RUN_ID", "t"},
                  {"SLURM_PROCID", "0"},
                  {"SLURM_NTASKS", "1"}});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value().launcher, "torchrun");
  // psdp's own variables win over everything.
  auto vars = psdpVars();
  vars["RANK"] = "0";
  vars["OMPI_COMM_WORLD_RANK"] = "0";
  r = parse(vars);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value().launcher, "psdp");
}

TEST(LauncherEnvTest, NoLauncherListsWhatToSet) {
  expectError(parse({{"HOME", "/root"}}), {"PSDP_RANK", "PSDP_ROOT_ADDR", "torchrun", "Open MPI", "Slurm"});
}

TEST(LauncherEnvTest, DerivedSecretsAreDistinctAndStable) {
  EXPECT_EQ(deriveJobSecret("slurm", "1.0"), deriveJobSecret("slurm", "1.0"));
  EXPECT_NE(deriveJobSecret("slurm", "1.0"), deriveJobSecret("slurm", "1.1"));
  EXPECT_NE(deriveJobSecret("slurm", "1.0"), deriveJobSecret("torchrun", "1.0"));
  JobSecret s = deriveJobSecret("torchrun", "");
  // The two 64-bit halves come from different lanes and must not be equal or zero.
  EXPECT_NE(std::vector<uint8_t>(s.begin(), s.begin() + 8), std::vector<uint8_t>(s.begin() + 8, s.end()));
  EXPECT_NE(s, JobSecret{});
}

}  // namespace
}  // namespace psdp::core
