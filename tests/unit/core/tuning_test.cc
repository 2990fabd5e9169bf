// The tuning file as a communicator applies it: where it is found, what is checked at load, the team's
// signature from its members' lanes, and where its rules go in the algorithm table.
#include "core/tuning.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace psdp::core {
namespace {

namespace fs = std::filesystem;

class TuningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("psdp_tuning_test." + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }

  fs::path dir_;
};

constexpr const char* kTwoSections =
    "psdp-tuning 1\n"
    "signature provider=ucx lanes=tcp hosts=2 ranks-per-host=1\n"
    "all-reduce bytes=0-inf algorithm=ring fragment=2M depth=16\n"
    "signature provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2\n"
    "all-reduce ranks=2 bytes=1M-4M algorithm=ring fragment=128K depth=8\n"
    "reduce-scatter algorithm=rhd\n"
    "engine chunk-bytes=* window=4 grouping=2\n";

TEST_F(TuningTest, NoneAndAnEmptySearchPathLoadNothing) {
  Config config = Config::defaults();
  config.tuning_file = "none";
  MapEnvironment env({{"XDG_CONFIG_HOME", dir_.string()}});
  write("psdp/tuning", kTwoSections);
  Result<LoadedTuning> none = loadTuning(config, env);
  ASSERT_TRUE(none.isOk()) << none.status().toString();
  EXPECT_EQ(none.value().file, nullptr);
  EXPECT_EQ(none.value().hash(), 0u);
  EXPECT_EQ(none.value().describe(), "no tuning file");

  config.tuning_file.clear();
  MapEnvironment elsewhere({{"XDG_CONFIG_HOME", (dir_ / "nothing-here").string()}});
  Result<LoadedTuning> empty = loadTuning(config, elsewhere);
  ASSERT_TRUE(empty.isOk()) << empty.status().toString();
  // /etc/psdp/tuning is the last place looked at; only a machine without one can say nothing is found.
  if (!fs::exists("/etc/psdp/tuning")) {
    EXPECT_EQ(empty.value().file, nullptr);
  }
}

TEST_F(TuningTest, TheSearchPathFindsTheUsersFileAndSizesTheStagingForEverySection) {
  const std::string path = write("psdp/tuning", kTwoSections);
  Config config = Config::defaults();
  MapEnvironment env({{"XDG_CONFIG_HOME", dir_.string()}});
  Result<LoadedTuning> loaded = loadTuning(config, env);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  ASSERT_NE(loaded.value().file, nullptr);
  EXPECT_EQ(loaded.value().path, path);
  EXPECT_EQ(loaded.value().describe(), path + " (the search path)");
  EXPECT_EQ(loaded.value().hash(), loaded.value().file->hash());
  EXPECT_NE(loaded.value().hash(), 0u);
  // The largest fragment and depth of any section: the tcp one's.
  EXPECT_EQ(loaded.value().largest_fragment_bytes, size_t{2} << 20);
  EXPECT_EQ(loaded.value().largest_depth, 16);
}

TEST_F(TuningTest, SearchPathFollowsXdgThenHomeThenEtc) {
  EXPECT_EQ(tuningSearchPath(MapEnvironment({{"XDG_CONFIG_HOME", "/x"}, {"HOME", "/h"}})),
            (std::vector<std::string>{"/x/psdp/tuning", "/etc/psdp/tuning"}));
  // A relative or empty XDG_CONFIG_HOME is ignored, as the XDG rules say.
  EXPECT_EQ(tuningSearchPath(MapEnvironment({{"XDG_CONFIG_HOME", "rel"}, {"HOME", "/h"}})),
            (std::vector<std::string>{"/h/.config/psdp/tuning", "/etc/psdp/tuning"}));
  EXPECT_EQ(tuningSearchPath(MapEnvironment()), (std::vector<std::string>{"/etc/psdp/tuning"}));
}

TEST_F(TuningTest, ErrorsNameTheFileTheLineAndTheColumn) {
  Config config = Config::defaults();
  MapEnvironment env;
  config.tuning_file = (dir_ / "missing").string();
  Result<LoadedTuning> missing = loadTuning(config, env);
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().toString().find(config.tuning_file), std::string::npos) << missing.status().toString();
  EXPECT_NE(missing.status().toString().find("PSDP_TUNING_FILE"), std::string::npos) << missing.status().toString();

  config.tuning_file = write("bad",
                             "psdp-tuning 1\nsignature provider=ucx lanes=tcp hosts=2 ranks-per-host=1\n"
                             "all-reduce algorithm=tree\n");
  Result<LoadedTuning> bad = loadTuning(config, env);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(bad.status().toString().find(config.tuning_file + ":3:22: algorithm: 'tree'"), std::string::npos)
      << bad.status().toString();

  // The format accepts it; the collectives do not (a fragment below 64 bytes): named by its line, in a
  // section that would not even apply here.
  config.tuning_file = write("small",
                             "psdp-tuning 1\nsignature provider=ucx lanes=rc hosts=* ranks-per-host=*\n"
                             "all-gather algorithm=ring fragment=8\n");
  Result<LoadedTuning> small = loadTuning(config, env);
  ASSERT_FALSE(small.isOk());
  EXPECT_NE(small.status().toString().find(config.tuning_file + ":3"), std::string::npos) << small.status().toString();
  EXPECT_NE(small.status().toString().find("fragment of 8 bytes"), std::string::npos) << small.status().toString();
}

TEST_F(TuningTest, TheTeamSignatureIsTheUnionOfEveryMembersLanes) {
  // Three ranks on two hosts: the rank alone on its host sees only tcp, the others shared memory too.
  tune::InterconnectSignature uneven = teamSignature("ucx", {"cma,sysv,tcp", "tcp", "cma,sysv,tcp"}, {0, 1, 0});
  EXPECT_EQ(uneven.format(), "provider=ucx lanes=cma,sysv,tcp hosts=2 ranks-per-host=*");
  EXPECT_EQ(uneven.ranks_per_host, 0);
  tune::InterconnectSignature even = teamSignature("ucx", {"sysv,cma", "cma,sysv"}, {0, 0});
  EXPECT_EQ(even.format(), "provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2");
}

// A single-copy lane anywhere in the signature (or lanes not known) keeps the built-in rules of a ring that
// copies once; lanes without one (UCX under caller progress: sysv alone) make reductions read with CMA from
// 256 KiB, in the table psdp-info shows for that signature too.
TEST_F(TuningTest, TheBuiltInRulesFollowTheSignaturesLanes) {
  auto traits = [](const char* text) {
    Result<tune::InterconnectSignature> signature = tune::parseSignatureText(text, "signature");
    EXPECT_TRUE(signature.isOk()) << signature.status().toString();
    return interconnectTraits(signature.value()).ring_single_copy;
  };
  EXPECT_TRUE(traits("provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2"));
  EXPECT_TRUE(traits("provider=ucx lanes=knem,posix hosts=1 ranks-per-host=2"));
  EXPECT_TRUE(traits("provider=ucx lanes=sysv,tcp,xpmem hosts=2 ranks-per-host=2"));
  EXPECT_TRUE(traits("provider=ucx lanes=* hosts=* ranks-per-host=*"));
  EXPECT_FALSE(traits("provider=ucx lanes=sysv hosts=1 ranks-per-host=2"));
  EXPECT_FALSE(traits("provider=ucx lanes=tcp hosts=1 ranks-per-host=4"));

  Config config = Config::defaults();
  config.tuning_file = "none";
  MapEnvironment env;
  const std::string middle = "reduce-scatter:256K-8M=direct,fallback=ring,cma=";
  for (const auto& [signature, cma] : {std::pair{"provider=ucx lanes=sysv hosts=1 ranks-per-host=2", "1"},
                                       std::pair{"provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2", "0"}}) {
    Result<std::string> table = formatAlgorithmTable(config, env, signature);
    ASSERT_TRUE(table.isOk()) << table.status().toString();
    EXPECT_NE(table.value().find(middle + cma), std::string::npos) << signature << "\n" << table.value();
  }
  // Without a signature: UCX's default transports under the config's progress mode.
  config.progress_mode = PSDP_PROGRESS_CALLER;
  Result<std::string> caller = formatAlgorithmTable(config, env, "");
  ASSERT_TRUE(caller.isOk()) << caller.status().toString();
  EXPECT_NE(caller.value().find(middle + "1"), std::string::npos) << caller.value();
  config.progress_mode = PSDP_PROGRESS_THREAD;
  Result<std::string> thread = formatAlgorithmTable(config, env, "");
  ASSERT_TRUE(thread.isOk()) << thread.status().toString();
  EXPECT_NE(thread.value().find(middle + "0"), std::string::npos) << thread.value();
}

TEST_F(TuningTest, TheSectionsRulesComeAfterTheUsersAndBeforeTheBuiltInOnes) {
  Config config = Config::defaults();
  config.tuning_file = write("t", kTwoSections);
  config.algorithms = "broadcast:0-=ring";
  config.algorithm = PSDP_ALGORITHM_RHD;
  MapEnvironment env;
  Result<LoadedTuning> loaded = loadTuning(config, env);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  const tune::TuningSection& shared_memory = loaded.value().file->sections()[1];
  Result<coll::AlgorithmTable> table = hostAlgorithmTable(config, loaded.value(), &shared_memory, {});
  ASSERT_TRUE(table.isOk()) << table.status().toString();
  auto rules = table.value().rules();
  ASSERT_GT(rules.size(), 4u);
  EXPECT_EQ(rules[0].originText(), "PSDP_ALGORITHMS");
  EXPECT_EQ(rules[1].originText(), "PSDP_ALGORITHM");
  EXPECT_EQ(rules[2].originText(), "tuning file line 5");
  EXPECT_EQ(coll::AlgorithmTable::formatRule(rules[2]), "all-reduce:1M-4M=ring,ranks=2-2,fragment=128K,depth=8");
  EXPECT_EQ(rules[3].originText(), "tuning file line 6");
  EXPECT_EQ(rules[4].originText(), "built-in");

  // host-ring replaces every rule, the tuned ones too.
  config.host_collectives = "host-ring";
  Result<coll::AlgorithmTable> ring = hostAlgorithmTable(config, loaded.value(), &shared_memory, {});
  ASSERT_TRUE(ring.isOk()) << ring.status().toString();
  EXPECT_EQ(ring.value().rules().size(), 1u);
}

TEST_F(TuningTest, TheTableForASignatureSaysWhichSectionAppliesOrWhyNone) {
  Config config = Config::defaults();
  config.tuning_file = write("t", kTwoSections);
  MapEnvironment env;
  Result<std::string> covered =
      formatAlgorithmTable(config, env, "provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2");
  ASSERT_TRUE(covered.isOk()) << covered.status().toString();
  EXPECT_EQ(
      covered.value().rfind(
          "# tuning file " + config.tuning_file + " (PSDP_TUNING_FILE): the section of line 4 covers provider=ucx", 0),
      0u)
      << covered.value();
  EXPECT_NE(covered.value().find("# tuning file line 5\n"), std::string::npos) << covered.value();
  EXPECT_NE(covered.value().find("# engine ranks=* chunk-bytes=* window=4 grouping=2"), std::string::npos)
      << covered.value();

  Result<std::string> other = formatAlgorithmTable(config, env, "provider=ucx lanes=rc hosts=4 ranks-per-host=8");
  ASSERT_TRUE(other.isOk()) << other.status().toString();
  EXPECT_NE(other.value().find("does not apply to provider=ucx lanes=rc hosts=4 ranks-per-host=8: no section covers "
                               "this job: line 2: lanes are rc here, tcp in the file; line 4: lanes are rc here, "
                               "cma,sysv in the file"),
            std::string::npos)
      << other.value();
  EXPECT_EQ(other.value().find("tuning file line"), std::string::npos) << other.value();

  Result<std::string> listed = formatAlgorithmTable(config, env, "");
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  EXPECT_NE(listed.value().find("line 2: provider=ucx lanes=tcp hosts=2 ranks-per-host=1; line 4: provider=ucx"),
            std::string::npos)
      << listed.value();

  Result<std::string> malformed = formatAlgorithmTable(config, env, "provider=ucx lanes=tcp");
  ASSERT_FALSE(malformed.isOk());
  EXPECT_NE(malformed.status().toString().find("signature:1:"), std::string::npos) << malformed.status().toString();
  EXPECT_NE(malformed.status().toString().find("lacks hosts="), std::string::npos) << malformed.status().toString();
}

}  // namespace
}  // namespace psdp::core
