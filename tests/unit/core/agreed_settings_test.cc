// The settings every rank of a communicator must share: they survive the rendezvous encoding, and a
// difference is named by its variable, both ranks and both values.
#include "core/agreed_settings.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace psdp::core {
namespace {

TEST(AgreedSettingsTest, EncodingRoundTrips) {
  Config config = Config::defaults();
  config.fragment_bytes = 65536;
  config.algorithm = PSDP_ALGORITHM_DIRECT;
  config.deterministic = true;
  config.check_calls = false;
  config.algorithms = "*:0-=ring";
  config.host_collectives = "host-ring";
  config.progress_mode = PSDP_PROGRESS_CALLER;
  AgreedSettings settings = agreedSettingsOf(config, 0x1234567890abcdefull);
  std::array<std::byte, kAgreedSettingsBytes> bytes{};
  encodeAgreedSettings(settings, bytes.data());
  EXPECT_EQ(decodeAgreedSettings(bytes.data()), settings);
}

TEST(AgreedSettingsTest, DifferencesNameTheVariableRanksAndValues) {
  const Config& defaults = Config::defaults();
  std::vector<AgreedSettings> same(3, agreedSettingsOf(defaults, 0));
  const std::vector<int> ranks = {4, 5, 7};
  EXPECT_TRUE(checkAgreedSettings(same, ranks).isOk());

  struct Case {
    void (*change)(Config&);
    const char* words[3];
  };
  const Case cases[] = {
      {[](Config& c) { c.fragment_bytes = 4096; }, {"PSDP_FRAGMENT_BYTES", "1048576", "4096"}},
      {[](Config& c) { c.algorithm = PSDP_ALGORITHM_RING; }, {"PSDP_ALGORITHM", "auto", "ring"}},
      {[](Config& c) { c.deterministic = true; }, {"PSDP_DETERMINISTIC", "has 0", "has 1"}},
      {[](Config& c) { c.check_calls = false; }, {"PSDP_CHECK", "full", "off"}},
      {[](Config& c) { c.algorithms = "all-reduce:0-=ring"; }, {"PSDP_ALGORITHMS", "rules hashing to", "0x"}},
      {[](Config& c) { c.host_collectives = "host-ring"; }, {"PSDP_HOST_COLLECTIVES", "has host,", "has host-ring"}},
      {[](Config& c) { c.host_collectives = "elsewhere"; }, {"PSDP_HOST_COLLECTIVES", "has host,", "hashing to 0x"}},
      {[](Config& c) { c.progress_mode = PSDP_PROGRESS_CALLER; }, {"PSDP_PROGRESS", "has thread", "has caller"}},
  };
  for (const Case& c : cases) {
    Config changed = defaults;
    c.change(changed);
    std::vector<AgreedSettings> settings = same;
    settings[2] = agreedSettingsOf(changed, 0);
    Status status = checkAgreedSettings(settings, ranks);
    ASSERT_EQ(status.code(), PSDP_ERR_MISMATCH) << c.words[0];
    for (const char* word : c.words) EXPECT_NE(status.message().find(word), std::string::npos) << status.toString();
    EXPECT_NE(status.message().find("rank 4 has"), std::string::npos) << status.toString();
    EXPECT_NE(status.message().find("rank 7 has"), std::string::npos) << status.toString();
  }
}

TEST(AgreedSettingsTest, ATuningFileOnOneRankOnlyIsAMismatch) {
  const Config& defaults = Config::defaults();
  std::vector<AgreedSettings> settings(3, agreedSettingsOf(defaults, 0));
  settings[1] = agreedSettingsOf(defaults, 0xfeedull);
  Status status = checkAgreedSettings(settings, std::vector<int>{0, 1, 2});
  ASSERT_EQ(status.code(), PSDP_ERR_MISMATCH);
  for (const char* word : {"PSDP_TUNING_FILE", "rank 0 has no tuning file",
                           "rank 1 has a tuning file whose rules "
                           "hash to 0x000000000000feed"}) {
    EXPECT_NE(status.message().find(word), std::string::npos) << status.toString();
  }
}

}  // namespace
}  // namespace psdp::core
