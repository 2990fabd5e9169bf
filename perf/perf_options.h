// Command line and report table of psdp-perf, kept apart from the measuring loop so that both can be unit
// tested without a communicator.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace psdp::perf {

enum class Collective {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
  kAllToAll,
  kSendRecv
};

// A reduction as the user names it. Premul-sum is not a psdp_op_t constant: psdp makes it per communicator
// and dtype with psdp_op_create_premul_sum, so the loop creates it when it runs the combination.
enum class Reduction { kSum, kProd, kMin, kMax, kAvg, kPremulSum };

// getopt's code of --min_busbw, which has no short form (nccl-tests uses most letters).
inline constexpr int kMinBusbwOption = 0x100;
inline constexpr int kWaitEachOption = 0x101;

struct Options {
  Collective collective = Collective::kAllReduce;
  size_t min_bytes = 32 << 20;
  size_t max_bytes = 32 << 20;
  size_t step_factor = 2;       // -f: multiply the size by this; 0: add step_bytes instead
  size_t step_bytes = 0;        // -i
  int iters = 20;               // -n
  int warmup = 5;               // -w
  int agg = 1;                  // -m: operations posted together (nonblocking, on disjoint buffers) per iteration
  bool wait_each = false;       // --wait_each 1: -m's requests waited one psdp_request_wait each, not all at once
  bool check = true;            // -c
  int root = 0;                 // -r: root of broadcast, reduce, gather and scatter
  bool blocking = true;         // -z 0: post each call with a request and wait on it
  bool shared_buffers = false;  // -R 1: buffers from psdp_mem_alloc, which direct collectives can reach
  bool huge_pages = false;      // -H 1: transparent huge pages advised for the buffers
  std::vector<psdp_dtype_t> dtypes{PSDP_FLOAT32};
  std::vector<Reduction> ops{Reduction::kSum};
  std::string json_path;  // -J
  double min_busbw = 0;   // --min_busbw: GB/s every row must reach; 0: no gate
  bool help = false;
};

const char* usage();
// A byte count such as 1024, 64K, 1M or 1G; false for anything else (a negative number, a bad suffix).
bool parseSize(const char* text, size_t* out);
// An integer in [lo, hi].
bool parseInt(const char* text, int lo, int hi, int* out);
// False with a message for a bad command line.
bool parseOptions(int argc, char** argv, Options* options, std::string* error);
// The size after `bytes`; larger than max_bytes when `bytes` was the last.
size_t nextSize(const Options& o, size_t bytes);

const char* collectiveName(Collective c);
// nccl-tests' spellings: "int8", "half", "bfloat16", "float", ...
const char* dtypeName(psdp_dtype_t dtype);
size_t dtypeBytes(psdp_dtype_t dtype);
const char* reductionName(Reduction r);
bool reduces(Collective c);
bool rooted(Collective c);
// False for all-to-all and send/recv, which have no in-place form: their in-place columns print N/A.
bool hasInPlace(Collective c);
// nccl-tests' busbw = algbw * factor: all-reduce 2(n-1)/n; reduce-scatter, all-gather, gather, scatter and
// all-to-all (n-1)/n; broadcast, reduce and send/recv 1.
double busFactor(Collective c, int nranks);

// One measured line: out-of-place and in-place of one size, dtype and op.
struct Row {
  size_t bytes = 0, count = 0;
  psdp_dtype_t dtype = PSDP_FLOAT32;
  const char* redop = "none";
  int root = -1;
  double oop_us = 0, oop_algbw = 0, oop_busbw = 0;
  long long oop_wrong = 0;
  double ip_us = 0, ip_algbw = 0, ip_busbw = 0;
  long long ip_wrong = 0;
};

// Prints nccl-tests' table to `out` (NULL on ranks other than 0) and, with -J, writes JSON at the end.
class Report {
 public:
  Report(const Options& options, int nranks, FILE* out) : o_(options), nranks_(nranks), out_(out) {}
  void header();
  // `total_count` is the element count nccl-tests prints: the whole vector for all-gather and reduce-scatter.
  void row(size_t total_count, psdp_dtype_t dtype, const char* redop, int root, double oop_us, long long oop_wrong,
           double ip_us, long long ip_wrong);
  // A combination this build of psdp cannot run: reported in the table and in the JSON, then skipped.
  void unsupported(psdp_dtype_t dtype, const char* redop, const std::string& why);
  // Prints the closing lines and writes the JSON file; returns false when the JSON file could not be written.
  bool footer();
  long long wrong() const;
  // The rows whose out-of-place or in-place busbw is below --min_busbw (none without the gate), as
  // "<bytes> B <dtype> <op> <place>: <busbw> GB/s"; the footer lists them.
  std::vector<std::string> belowGate() const;
  int unsupportedCount() const { return static_cast<int>(skipped_.size()); }
  const std::vector<Row>& rows() const { return rows_; }

 private:
  bool writeJson() const;

  const Options& o_;
  int nranks_;
  FILE* out_;
  std::vector<Row> rows_;
  std::vector<std::string> skipped_;
};

}  // namespace psdp::perf
