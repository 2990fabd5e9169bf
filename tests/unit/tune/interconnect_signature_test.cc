#include "tune/interconnect_signature.h"

#include <gtest/gtest.h>

#include "tune/tuning_file.h"

namespace psdp::tune {
namespace {

InterconnectSignature job(std::string provider, std::vector<std::string> lanes, int hosts, int per_host) {
  InterconnectSignature s;
  s.provider = std::move(provider);
  s.lanes = std::move(lanes);
  s.hosts = hosts;
  s.ranks_per_host = per_host;
  return s;
}

// The signature of the file's only section.
InterconnectSignature read(const std::string& line) {
  auto file = TuningFile::parse("psdp-tuning 1\nsignature " + line + "\n", "t");
  EXPECT_TRUE(file.isOk()) << file.status().toString();
  return file.isOk() ? file.value().sections().at(0).signature : InterconnectSignature{};
}

TEST(InterconnectSignatureTest, ReadsLanesInAnyOrderAndWritesThemSorted) {
  InterconnectSignature s = read("ranks-per-host=2 lanes=sysv,cma hosts=1 provider=ucx");
  EXPECT_EQ(s, job("ucx", {"cma", "sysv"}, 1, 2));
  EXPECT_EQ(s.format(), "provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2");
}

TEST(InterconnectSignatureTest, CoversOnlyTheJobsItWasWrittenFor) {
  InterconnectSignature file = read("provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2");
  std::string why;
  EXPECT_TRUE(file.covers(job("ucx", {"cma", "sysv"}, 1, 2), &why));
  EXPECT_FALSE(file.covers(job("ucx", {"tcp"}, 2, 1), &why));
  EXPECT_EQ(why, "lanes are tcp here, cma,sysv in the file");
  EXPECT_FALSE(file.covers(job("ucx", {"cma", "sysv"}, 1, 4), &why));
  EXPECT_EQ(why, "ranks per host are 4 here, 2 in the file");
  EXPECT_FALSE(file.covers(job("nccl", {"cma", "sysv"}, 1, 2), &why));
  EXPECT_EQ(why, "the provider is nccl here, ucx in the file");
}

TEST(InterconnectSignatureTest, WildcardsCoverAnyValue) {
  InterconnectSignature any = read("provider=* lanes=* hosts=* ranks-per-host=*");
  EXPECT_EQ(any.format(), "provider=* lanes=* hosts=* ranks-per-host=*");
  EXPECT_TRUE(any.covers(job("ucx", {"tcp"}, 3, 1), nullptr));
  InterconnectSignature tcp = read("provider=ucx lanes=tcp hosts=* ranks-per-host=*");
  EXPECT_TRUE(tcp.covers(job("ucx", {"tcp"}, 3, 1), nullptr));
  EXPECT_FALSE(tcp.covers(job("ucx", {"sysv", "tcp"}, 3, 2), nullptr));
}

}  // namespace
}  // namespace psdp::tune
