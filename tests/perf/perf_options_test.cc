// psdp-perf's command line, report and data checks, without a communicator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "perf_data.h"
#include "perf_options.h"

namespace psdp::perf {
namespace {

// Parses a command line given as words (argv[0] added).
bool parse(std::vector<std::string> words, Options* o, std::string* error) {
  words.insert(words.begin(), "psdp-perf");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  return parseOptions(static_cast<int>(words.size()), argv.data(), o, error);
}

std::string parseError(std::vector<std::string> words) {
  Options o;
  std::string error;
  EXPECT_FALSE(parse(words, &o, &error)) << "accepted: " << words.back();
  return error;
}

TEST(PerfOptions, NcclTestsCommandLine) {
  Options o;
  std::string error;
  ASSERT_TRUE(parse({"all_gather_perf", "-b", "8", "-e", "128M", "-f", "2", "-g", "1", "-n", "7", "-w", "3", "-c", "0",
                     "-d", "bfloat16", "-J", "out.json"},
                    &o, &error))
      << error;
  EXPECT_EQ(o.collective, Collective::kAllGather);
  EXPECT_EQ(o.min_bytes, 8u);
  EXPECT_EQ(o.max_bytes, 128u << 20);
  EXPECT_EQ(o.step_factor, 2u);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.warmup, 3);
  EXPECT_FALSE(o.check);
  EXPECT_EQ(o.dtypes, std::vector<psdp_dtype_t>{PSDP_BFLOAT16});
  EXPECT_EQ(o.json_path, "out.json");
}

TEST(PerfOptions, LongOptionsRootAndStepBytes) {
  Options o;
  std::string error;
  ASSERT_TRUE(parse({"bcast", "--minbytes", "1K", "--maxbytes", "1G", "--stepbytes", "64k", "--root", "3", "--op",
                     "max", "--datatype", "half", "-z", "0"},
                    &o, &error))
      << error;
  EXPECT_EQ(o.collective, Collective::kBroadcast);
  EXPECT_EQ(o.min_bytes, 1024u);
  EXPECT_EQ(o.max_bytes, size_t{1} << 30);
  EXPECT_EQ(o.step_factor, 0u);
  EXPECT_EQ(o.step_bytes, 64u << 10);
  EXPECT_EQ(o.root, 3);
  EXPECT_FALSE(o.blocking);
  EXPECT_EQ(o.dtypes, std::vector<psdp_dtype_t>{PSDP_FLOAT16});
  // Broadcast does not reduce: one row per dtype whatever -o says.
  EXPECT_EQ(o.ops.size(), 1u);
}

TEST(PerfOptions, AllDtypesAndOpsAndSpellings) {
  Options o;
  std::string error;
  ASSERT_TRUE(parse({"ar", "-d", "all", "-o", "all"}, &o, &error)) << error;
  EXPECT_EQ(o.dtypes.size(), static_cast<size_t>(PSDP_NUM_DTYPES));
  EXPECT_EQ(o.ops.size(), 6u);
  EXPECT_EQ(o.ops.back(), Reduction::kPremulSum);
  const std::pair<const char*, psdp_dtype_t> spellings[] = {
      {"int8", PSDP_INT8},       {"char", PSDP_INT8},       {"uint8", PSDP_UINT8},       {"int32", PSDP_INT32},
      {"int", PSDP_INT32},       {"uint32", PSDP_UINT32},   {"int64", PSDP_INT64},       {"uint64", PSDP_UINT64},
      {"half", PSDP_FLOAT16},    {"float16", PSDP_FLOAT16}, {"bfloat16", PSDP_BFLOAT16}, {"float", PSDP_FLOAT32},
      {"float32", PSDP_FLOAT32}, {"double", PSDP_FLOAT64},  {"float64", PSDP_FLOAT64}};
  for (const auto& [name, dtype] : spellings) {
    Options one;
    ASSERT_TRUE(parse({"ar", "-d", name}, &one, &error)) << name;
    EXPECT_EQ(one.dtypes, std::vector<psdp_dtype_t>{dtype}) << name;
  }
  EXPECT_STREQ(dtypeName(PSDP_FLOAT16), "half");
  EXPECT_STREQ(dtypeName(PSDP_FLOAT32), "float");
  for (const char* name : {"reduce_scatter_perf", "rs", "all_reduce_perf", "ar", "ag", "broadcast_perf"}) {
    Options one;
    EXPECT_TRUE(parse({name}, &one, &error)) << name;
  }
}

// nccl-tests' -m (agg_iters): operations in flight per iteration.
TEST(PerfOptions, AggregatedOperations) {
  Options o;
  std::string error;
  EXPECT_EQ(o.agg, 1);
  ASSERT_TRUE(parse({"ar", "-m", "64"}, &o, &error)) << error;
  EXPECT_EQ(o.agg, 64);
  Options long_form;
  ASSERT_TRUE(parse({"ar", "--agg_iters", "8"}, &long_form, &error)) << error;
  EXPECT_EQ(long_form.agg, 8);
  EXPECT_NE(parseError({"ar", "-m", "0"}).find("-m"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-m", "5000"}).find("-m"), std::string::npos);
}

TEST(PerfOptions, BadInputIsRejectedWithAMessage) {
  EXPECT_NE(parseError({"gatherv"}).find("unknown collective 'gatherv'"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-b", "1X"}).find("-b"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-b", "-1"}).find("-b"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-e", "99999999999999999999"}).find("-e"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-e", "17179869184G"}).find("-e"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-b", "2M", "-e", "1M"}).find("-b is larger than -e"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-f", "1"}).find("-f"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-i", "0"}).find("-i"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-n", "0"}).find("-n"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-w", "x"}).find("-w"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-c", "2"}).find("-c"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-r", "-1"}).find("-r"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-d", "fp8"}).find("unknown datatype"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-o", "band"}).find("unknown op"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-t", "4"}).find("one rank per process"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-q"}).find("unknown option -q"), std::string::npos);
  EXPECT_NE(parseError({"ar", "-n"}).find("needs a value"), std::string::npos);
  EXPECT_NE(parseError({"ar", "stray"}).find("unexpected argument 'stray'"), std::string::npos);
}

TEST(PerfOptions, SizeSteps) {
  Options o;
  std::string error;
  ASSERT_TRUE(parse({"ar", "-b", "1M", "-e", "256M", "-f", "2"}, &o, &error)) << error;
  std::vector<size_t> sizes;
  for (size_t b = o.min_bytes; b <= o.max_bytes; b = nextSize(o, b)) sizes.push_back(b);
  ASSERT_EQ(sizes.size(), 9u);
  EXPECT_EQ(sizes.back(), 256u << 20);
  ASSERT_TRUE(parse({"ar", "-b", "0", "-e", "3", "-f", "2"}, &o, &error)) << error;
  sizes.clear();
  for (size_t b = o.min_bytes; b <= o.max_bytes; b = nextSize(o, b)) sizes.push_back(b);
  EXPECT_EQ(sizes, (std::vector<size_t>{0, 1, 2}));  // zero steps to 1 rather than looping forever
  ASSERT_TRUE(parse({"ar", "-b", "10", "-e", "35", "-i", "10"}, &o, &error)) << error;
  sizes.clear();
  for (size_t b = o.min_bytes; b <= o.max_bytes; b = nextSize(o, b)) sizes.push_back(b);
  EXPECT_EQ(sizes, (std::vector<size_t>{10, 20, 30}));
}

TEST(PerfOptions, BusBandwidthFactorsOfNcclTests) {
  EXPECT_DOUBLE_EQ(busFactor(Collective::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busFactor(Collective::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(busFactor(Collective::kAllGather, 2), 0.5);
  EXPECT_DOUBLE_EQ(busFactor(Collective::kBroadcast, 8), 1.0);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(PerfReport, TableFooterAndJson) {
  Options o;
  o.collective = Collective::kAllReduce;
  o.json_path = testing::TempDir() + "perf_report_test.json";
  char* text = nullptr;
  size_t text_size = 0;
  FILE* out = open_memstream(&text, &text_size);
  ASSERT_NE(out, nullptr);
  {
    Report r(o, 2, out);
    r.header();
    // 1 MB in 100 us is 10 GB/s algbw; all-reduce on 2 ranks has busbw factor 1.
    r.row(262144, PSDP_FLOAT32, "sum", -1, 100.0, 0, 200.0, 3);
    r.unsupported(PSDP_INT8, "prod", "reason \"quoted\"");
    EXPECT_EQ(r.wrong(), 3);
    EXPECT_TRUE(r.footer());
    ASSERT_EQ(r.rows().size(), 1u);
    EXPECT_DOUBLE_EQ(r.rows()[0].oop_algbw, 1048576 / 100.0 / 1e3);
    EXPECT_DOUBLE_EQ(r.rows()[0].ip_busbw, 1048576 / 200.0 / 1e3);
  }
  std::fclose(out);
  std::string table(text, text_size);
  std::free(text);
  for (const char* want : {"out-of-place", "in-place", "#wrong", "redop", "root", "1048576", "262144", "float",
                           "# Out of bounds values : 3 FAILED", "# Avg bus bandwidth", "unsupported by this build"}) {
    EXPECT_NE(table.find(want), std::string::npos) << want << " missing from:\n" << table;
  }
  std::string json = slurp(o.json_path);
  EXPECT_NE(json.find("\"wrong\": 3"), std::string::npos) << json;
  EXPECT_NE(json.find("reason \\\"quoted\\\""), std::string::npos) << json;
}

TEST(PerfReport, UnwritableJsonFails) {
  Options o;
  o.json_path = "/dev/null/x.json";  // a file as a directory: fails even for root
  FILE* out = std::fopen("/dev/null", "w");
  Report r(o, 2, out);
  EXPECT_FALSE(r.footer());
  std::fclose(out);
}

TEST(PerfData, HalfAndBfloat16Conversions) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00);
  EXPECT_EQ(halfToFloat(floatToHalf(2049.0f)), 2048.0f);  // ties to even
  EXPECT_EQ(halfToFloat(floatToHalf(2051.0f)), 2052.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16ToFloat(floatToBfloat16(257.0f)), 256.0f);
  EXPECT_EQ(bfloat16ToFloat(floatToBfloat16(-100.0f)), -100.0f);
  for (int v = -300; v <= 300; ++v) {
    EXPECT_EQ(halfToFloat(floatToHalf(static_cast<float>(v))), static_cast<float>(v));
  }
}

// Element i of a dtype buffer as double, independently of perf_data's internals.
double load(psdp_dtype_t d, const std::vector<char>& buf, size_t i) {
  const char* p = buf.data() + i * dtypeBytes(d);
  switch (d) {
    case PSDP_INT8: return *reinterpret_cast<const int8_t*>(p);
    case PSDP_UINT8: return *reinterpret_cast<const uint8_t*>(p);
    case PSDP_INT32: return *reinterpret_cast<const int32_t*>(p);
    case PSDP_UINT32: return *reinterpret_cast<const uint32_t*>(p);
    case PSDP_INT64: return static_cast<double>(*reinterpret_cast<const int64_t*>(p));
    case PSDP_UINT64: return static_cast<double>(*reinterpret_cast<const uint64_t*>(p));
    case PSDP_FLOAT16: return halfToFloat(*reinterpret_cast<const unsigned short*>(p));
    case PSDP_BFLOAT16: return bfloat16ToFloat(*reinterpret_cast<const unsigned short*>(p));
    case PSDP_FLOAT32: return *reinterpret_cast<const float*>(p);
    default: return *reinterpret_cast<const double*>(p);
  }
}

void store(psdp_dtype_t d, std::vector<char>& buf, size_t i, double v) {
  char* p = buf.data() + i * dtypeBytes(d);
  switch (d) {
    case PSDP_INT8: *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(v); break;
    case PSDP_UINT8: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(v); break;
    case PSDP_INT32: *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v); break;
    case PSDP_UINT32: *reinterpret_cast<uint32_t*>(p) = static_cast<uint32_t>(v); break;
    case PSDP_INT64: *reinterpret_cast<int64_t*>(p) = static_cast<int64_t>(v); break;
    case PSDP_UINT64: *reinterpret_cast<uint64_t*>(p) = static_cast<uint64_t>(v); break;
    case PSDP_FLOAT16: *reinterpret_cast<unsigned short*>(p) = floatToHalf(static_cast<float>(v)); break;
    case PSDP_BFLOAT16: *reinterpret_cast<unsigned short*>(p) = floatToBfloat16(static_cast<float>(v)); break;
    case PSDP_FLOAT32: *reinterpret_cast<float*>(p) = static_cast<float>(v); break;
    default: *reinterpret_cast<double*>(p) = v; break;
  }
}

// Reduces the ranks' inputs as a correct library would and checks that the verifier accepts exactly that,
// and rejects one changed element and an untouched (garbage) buffer.
TEST(PerfData, VerifierAcceptsTheCorrectReductionOnly) {
  const int nranks = 3;
  const size_t count = 1000;
  for (int d = 0; d < PSDP_NUM_DTYPES; ++d) {
    auto dtype = static_cast<psdp_dtype_t>(d);
    for (int r = 0; r <= static_cast<int>(Reduction::kPremulSum); ++r) {
      auto op = static_cast<Reduction>(r);
      SCOPED_TRACE(std::string(dtypeName(dtype)) + " " + reductionName(op));
      std::vector<std::vector<char>> in(nranks, std::vector<char>(count * dtypeBytes(dtype)));
      for (int k = 0; k < nranks; ++k) fillInput(Collective::kAllReduce, op, dtype, k, 0, 0, count, in[k].data());
      std::vector<char> out(count * dtypeBytes(dtype));
      for (size_t i = 0; i < count; ++i) {
        double acc = load(dtype, in[0], i) * (op == Reduction::kPremulSum ? 2 : 1);
        for (int k = 1; k < nranks; ++k) {
          double v = load(dtype, in[k], i);
          if (op == Reduction::kProd) acc *= v;
          if (op == Reduction::kMin) acc = std::min(acc, v);
          if (op == Reduction::kMax) acc = std::max(acc, v);
          if (op == Reduction::kSum || op == Reduction::kAvg) acc += v;
          if (op == Reduction::kPremulSum) acc += 2 * v;
        }
        if (op == Reduction::kAvg) acc /= nranks;
        store(dtype, out, i, acc);
      }
      EXPECT_EQ(countWrong(Collective::kAllReduce, op, dtype, nranks, 0, 0, count, 0, count, out.data()), 0);
      store(dtype, out, 17, load(dtype, out, 17) + 1);
      EXPECT_EQ(countWrong(Collective::kAllReduce, op, dtype, nranks, 0, 0, count, 0, count, out.data()), 1);
      fillGarbage(dtype, count, out.data());
      EXPECT_EQ(countWrong(Collective::kAllReduce, op, dtype, nranks, 0, 0, count, 0, count, out.data()),
                static_cast<long long>(count));
    }
  }
}

TEST(PerfData, InputsExerciseTheOps) {
  // Min and max of signed types see negative values; different ranks differ, so a rank mix-up shows.
  std::vector<int32_t> a(64), b(64);
  fillInput(Collective::kAllReduce, Reduction::kMin, PSDP_INT32, 0, 0, 0, 64, a.data());
  fillInput(Collective::kAllReduce, Reduction::kMin, PSDP_INT32, 1, 0, 0, 64, b.data());
  EXPECT_LT(*std::min_element(a.begin(), a.end()), 0);
  EXPECT_NE(a, b);
  fillInput(Collective::kAllReduce, Reduction::kProd, PSDP_INT32, 0, 0, 0, 64, a.data());
  EXPECT_EQ(*std::max_element(a.begin(), a.end()), 2);
}

TEST(PerfData, AllGatherAndBroadcastLayouts) {
  const int nranks = 4;
  const size_t per = 50;
  std::vector<float> out(per * nranks);
  for (int k = 0; k < nranks; ++k) {
    fillInput(Collective::kAllGather, Reduction::kSum, PSDP_FLOAT32, k, 0, k * per, per, out.data() + k * per);
  }
  EXPECT_EQ(
      countWrong(Collective::kAllGather, Reduction::kSum, PSDP_FLOAT32, nranks, 0, 0, per, 0, out.size(), out.data()),
      0);
  std::swap(out[0], out[per]);  // rank 0's and rank 1's first elements in each other's place
  EXPECT_EQ(
      countWrong(Collective::kAllGather, Reduction::kSum, PSDP_FLOAT32, nranks, 0, 0, per, 0, out.size(), out.data()),
      2);
  // Broadcast from root 2: the root's input is right, a non-root's own input is wrong almost everywhere, so an
  // in-place broadcast that does nothing on a non-root is caught.
  std::vector<double> root(per), other(per);
  fillInput(Collective::kBroadcast, Reduction::kSum, PSDP_FLOAT64, 2, 2, 0, per, root.data());
  fillInput(Collective::kBroadcast, Reduction::kSum, PSDP_FLOAT64, 1, 2, 0, per, other.data());
  EXPECT_EQ(countWrong(Collective::kBroadcast, Reduction::kSum, PSDP_FLOAT64, nranks, 0, 2, per, 0, per, root.data()),
            0);
  EXPECT_GT(countWrong(Collective::kBroadcast, Reduction::kSum, PSDP_FLOAT64, nranks, 0, 2, per, 0, per, other.data()),
            static_cast<long long>(per) / 2);
}

// All-to-all: rank x's result block s is block x of rank s's input; a block from the wrong source or meant
// for another rank is caught. Send/recv: the result is the left neighbour's input.
TEST(PerfData, AllToAllAndSendRecvLayouts) {
  const int nranks = 3;
  const size_t per = 20;
  const size_t n = static_cast<size_t>(nranks);
  std::vector<std::vector<int32_t>> input(n, std::vector<int32_t>(per * n));
  for (int r = 0; r < nranks; ++r) {
    fillInput(Collective::kAllToAll, Reduction::kSum, PSDP_INT32, r, 0, 0, per * n, input[r].data());
  }
  for (int x = 0; x < nranks; ++x) {
    std::vector<int32_t> result(per * n);
    for (size_t s = 0; s < n; ++s) std::copy_n(input[s].begin() + x * per, per, result.begin() + s * per);
    EXPECT_EQ(countWrong(Collective::kAllToAll, Reduction::kSum, PSDP_INT32, nranks, x, 0, per, 0, result.size(),
                         result.data()),
              0);
    // Rank x's own input instead: every block but its own is wrong somewhere.
    EXPECT_GT(countWrong(Collective::kAllToAll, Reduction::kSum, PSDP_INT32, nranks, x, 0, per, 0, result.size(),
                         input[x].data()),
              0);
  }
  EXPECT_EQ(countWrong(Collective::kSendRecv, Reduction::kSum, PSDP_INT32, nranks, 1, 0, per * n, 0, per * n,
                       input[0].data()),
            0);
  EXPECT_GT(countWrong(Collective::kSendRecv, Reduction::kSum, PSDP_INT32, nranks, 1, 0, per * n, 0, per * n,
                       input[2].data()),
            0);
}

}  // namespace
}  // namespace psdp::perf
