#include "tune/tuning_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace psdp::tune {
namespace {

constexpr const char* kExample = R"(# measured by psdp-tune
psdp-tuning 1
signature provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2
all-reduce ranks=2 bytes=0-256K algorithm=rhd
all-reduce ranks=2 bytes=256K-8M algorithm=direct cma=0 backoff=64   # private buffers
all-reduce ranks=2-8 bytes=8M-inf algorithm=direct cma=1 stream=1 fallback=ring
reduce-scatter bytes=8M- algorithm=ring fragment=512K depth=8
* algorithm=ring
engine ranks=* chunk-bytes=0-64M window=4 grouping=2
engine window=2 fragment=256K
signature provider=ucx lanes=tcp hosts=* ranks-per-host=*
all-gather ranks=2-inf algorithm=ring fragment=1M
)";

TuningFile parsed(std::string_view text) {
  auto file = TuningFile::parse(text, "example.tune");
  EXPECT_TRUE(file.isOk()) << file.status().toString();
  return file.isOk() ? std::move(file).value() : TuningFile{};
}

TEST(TuningFileTest, ReadsSectionsAndRulesInOrder) {
  TuningFile file = parsed(kExample);
  ASSERT_EQ(file.sections().size(), 2u);
  const TuningSection& shm = file.sections()[0];
  EXPECT_EQ(shm.line, 3);
  ASSERT_EQ(shm.collectives.size(), 5u);
  ASSERT_EQ(shm.engine.size(), 2u);
  const CollectiveRule& direct = shm.collectives[1];
  EXPECT_EQ(direct.collective, "all-reduce");
  EXPECT_EQ(direct.min_ranks, 2);
  EXPECT_EQ(direct.max_ranks, 2);
  EXPECT_EQ(direct.min_bytes, 256u << 10);
  EXPECT_EQ(direct.max_bytes, 8u << 20);
  EXPECT_EQ(direct.algorithm, "direct");
  EXPECT_EQ(direct.cma, 0);
  EXPECT_EQ(direct.stream, -1);
  EXPECT_EQ(direct.backoff, 64);
  EXPECT_EQ(direct.line, 5);
  const CollectiveRule& ring = shm.collectives[3];
  EXPECT_EQ(ring.max_bytes, SIZE_MAX);
  EXPECT_EQ(ring.fragment_bytes, 512u << 10);
  EXPECT_EQ(ring.depth, 8);
  EXPECT_EQ(shm.engine[0].max_chunk_bytes, 64u << 20);
  EXPECT_EQ(shm.engine[0].window, 4);
  EXPECT_EQ(shm.engine[0].grouping, 2);
  EXPECT_EQ(shm.engine[0].fragment_bytes, 0u);
  EXPECT_EQ(shm.engine[1].fragment_bytes, 256u << 10);
}

TEST(TuningFileTest, TheFirstMatchingRuleDecides) {
  const TuningFile file = parsed(kExample);
  const TuningSection& s = file.sections()[0];
  auto algorithm = [&](std::string_view collective, int nranks, size_t bytes) -> std::string {
    const CollectiveRule* rule = s.findCollective(collective, nranks, bytes);
    return rule == nullptr ? "none" : rule->algorithm + "@" + std::to_string(rule->line);
  };
  EXPECT_EQ(algorithm("all-reduce", 2, 0), "rhd@4");
  EXPECT_EQ(algorithm("all-reduce", 2, (256 << 10) - 1), "rhd@4");
  EXPECT_EQ(algorithm("all-reduce", 2, 256 << 10), "direct@5");  // ranges include their start, not their end
  EXPECT_EQ(algorithm("all-reduce", 4, 1 << 20), "ring@8");      // ranks=2 rules skip 4 ranks
  EXPECT_EQ(algorithm("all-reduce", 8, 64 << 20), "direct@6");
  EXPECT_EQ(algorithm("all-reduce", 9, 64 << 20), "ring@8");
  EXPECT_EQ(algorithm("reduce-scatter", 16, SIZE_MAX - 1), "ring@7");
  EXPECT_EQ(algorithm("broadcast", 2, 1), "ring@8");
  EXPECT_EQ(file.sections()[1].findCollective("all-reduce", 2, 1), nullptr);
  ASSERT_NE(s.findEngine(2, 64 << 20), nullptr);
  EXPECT_EQ(s.findEngine(2, 64 << 20)->line, 10);
  EXPECT_EQ(s.findEngine(2, (64 << 20) - 1)->line, 9);
}

TEST(TuningFileTest, ChoosesTheSectionOfTheJobOrSaysWhyNone) {
  TuningFile file = parsed(kExample);
  InterconnectSignature tcp{"ucx", {"tcp"}, 3, 1};
  std::string why;
  ASSERT_EQ(file.sectionFor(tcp, &why), &file.sections()[1]);
  InterconnectSignature posix{"ucx", {"cma", "posix"}, 1, 2};
  EXPECT_EQ(file.sectionFor(posix, &why), nullptr);
  EXPECT_EQ(why,
            "no section covers this job: line 3: lanes are cma,posix here, cma,sysv in the file; line 11: lanes are "
            "cma,posix here, tcp in the file");
}

TEST(TuningFileTest, TheCanonicalTextReadsBackAndHashesAlikeWhateverTheSpacing) {
  TuningFile file = parsed(kExample);
  const std::string text = file.format();
  EXPECT_EQ(parsed(text).format(), text);
  EXPECT_NE(text.find("all-reduce ranks=2-8 bytes=8M-inf algorithm=direct fallback=ring cma=1 stream=1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("* ranks=* bytes=* algorithm=ring\n"), std::string::npos) << text;
  EXPECT_EQ(parsed(text).hash(), file.hash());
  std::string spaced = "\n\n  psdp-tuning   1 # v1\n" + text.substr(text.find('\n') + 1);
  for (size_t at = 0; (at = spaced.find(" bytes", at)) != std::string::npos; at += 3) spaced.insert(at, "\t ");
  EXPECT_EQ(parsed(spaced).hash(), file.hash());
  std::string other = text;
  other.replace(other.find("depth=8"), 7, "depth=4");
  EXPECT_NE(parsed(other).hash(), file.hash());
}

struct BadFile {
  const char* text;   // a whole file, or with "3:" errors a line after a header and a signature
  const char* error;  // the whole message after "bad.tune:"
};

TEST(TuningFileTest, MalformedFilesNameTheLineAndColumn) {
  const std::string header = "psdp-tuning 1\nsignature provider=ucx lanes=tcp hosts=2 ranks-per-host=1\n";
  const BadFile cases[] = {
      {"", " empty: a tuning file starts with 'psdp-tuning 1'"},
      {"# nothing\n", " empty: a tuning file starts with 'psdp-tuning 1'"},
      {"psdp-tuning 2\n", "1:13: format version 2 is not one this psdp reads (1)"},
      {"psdp-tuning one\n", "1:13: version: 'one' is not a whole number"},
      {"all-reduce algorithm=ring\n", "1:1: a tuning file starts with 'psdp-tuning 1'"},
      {"psdp-tuning 1\nall-reduce algorithm=ring\n", "2:1: a rule before the first signature line"},
      {"psdp-tuning 1\nsignature provider=ucx lanes=tcp hosts=2\n",
       "2:41: the signature lacks ranks-per-host= (\"*\" for any)"},
      {"psdp-tuning 1\nsignature provider=ucx lanes=tcp,,cma hosts=2 ranks-per-host=1\n",
       "2:34: lanes: '' is not a transport name"},
      {"psdp-tuning 1\nsignature provider=ucx lanes=tcp hosts=0 ranks-per-host=1\n",
       "2:40: hosts: 0 is outside [1, 1048576]"},
      {"psdp-tuning 1\nsignature provider=ucx provider=nccl lanes=tcp hosts=2 ranks-per-host=1\n",
       "2:24: provider given twice"},
      {"all-reduce bytes=0-256K\n", "3:24: the rule lacks algorithm= (ring, rhd or direct)"},
      {"all-reduce algorithm=tree\n", "3:22: algorithm: 'tree' is not one of ring, rhd, direct"},
      {"allreduce algorithm=ring\n",
       "3:1: 'allreduce' is not a statement (signature, engine, or a collective: all-reduce, reduce-scatter, "
       "all-gather, broadcast, *)"},
      {"all-reduce  bytes=256K-64K algorithm=ring\n", "3:24: bytes: the range 256K-64K is empty"},
      {"all-reduce bytes=64Q-1M algorithm=ring\n",
       "3:18: bytes: '64Q' is not a size (digits with an optional K, M or G)"},
      {"all-reduce bytes=1M algorithm=ring\n",
       "3:18: bytes: '1M' is not a range (<from>-<below>, e.g. 0-256K or 8M-inf)"},
      {"all-reduce ranks=4-2 algorithm=ring\n", "3:20: ranks: the range 4-2 ends below its start"},
      {"all-reduce ranks=0 algorithm=ring\n", "3:18: ranks: 0 is outside [1, 2147483647]"},
      {"all-reduce algorithm=ring depth=0\n", "3:33: depth: 0 is outside [1, 65536]"},
      {"all-reduce algorithm=ring cma=yes\n", "3:31: cma: 'yes' is not a whole number"},
      {"all-reduce algorithm=ring fragment=0\n", "3:36: fragment: must be at least 1 byte"},
      {"all-reduce algorithm=ring algorithm=rhd\n", "3:27: algorithm given twice"},
      {"all-reduce algorithm=ring window=4\n",
       "3:27: 'window' is not a field of a collective rule (ranks, bytes, algorithm, fallback, cma, stream, "
       "backoff, fragment, depth)"},
      {"all-reduce algorithm=ring fallback=direct\n", "3:36: fallback: 'direct' is not one of ring, rhd"},
      {"all-reduce algorithm==ring\n", "3:12: 'algorithm==ring' is not a key=value field"},
      {"all-reduce ring\n", "3:12: 'ring' is not a key=value field"},
      {"engine ranks=2\n", "3:15: the rule sets none of window=, grouping= and fragment="},
      {"engine window=4 depth=2\n",
       "3:17: 'depth' is not a field of an engine rule (ranks, chunk-bytes, window, "
       "grouping, fragment)"},
      {"engine fragment=0\n", "3:17: fragment: must be at least 1 byte"},
  };
  for (const BadFile& c : cases) {
    const bool rule_line = std::string_view(c.error).rfind("3:", 0) == 0;
    const std::string input = rule_line ? header + c.text : c.text;
    auto file = TuningFile::parse(input, "bad.tune");
    ASSERT_FALSE(file.isOk()) << input;
    EXPECT_EQ(file.status().code(), PSDP_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(file.status().message(), std::string("bad.tune:") + c.error) << input;
  }
}

TEST(TuningFileTest, RefusesBinaryContent) {
  auto file = TuningFile::parse(std::string("psdp-tuning 1\nsignature \0\n", 25), "bad.tune");
  ASSERT_FALSE(file.isOk());
  EXPECT_EQ(file.status().message(), "bad.tune:2:11: a NUL byte: not a text file");
}

TEST(TuningFileTest, LoadsAFileAndNamesOneItCannotRead) {
  char path[] = "/tmp/psdp-tune-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream out(path);
    out << kExample;
  }
  auto file = TuningFile::load(path);
  ASSERT_TRUE(file.isOk()) << file.status().toString();
  EXPECT_EQ(file.value().hash(), parsed(kExample).hash());
  {
    std::ofstream out(path);
    out << "psdp-tuning 1\n" << std::string(kMaxFileBytes, '#');
  }
  auto large = TuningFile::load(path);
  ASSERT_FALSE(large.isOk());
  EXPECT_NE(large.status().message().find("more than a tuning file may have"), std::string::npos);
  std::remove(path);
  auto missing = TuningFile::load(path);
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), PSDP_ERR_SYSTEM);
  EXPECT_NE(missing.status().message().find(path), std::string::npos) << missing.status().message();
}

}  // namespace
}  // namespace psdp::tune
