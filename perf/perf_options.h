// Command line and report table of psdp-perf, kept apart from the measuring loop.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace psdp::perf {

enum class Collective { kAllReduce, kReduceScatter, kAllGather };

struct Options {
  Collective collective = Collective::kAllReduce;
  size_t min_bytes = 32 << 20;
  size_t max_bytes = 32 << 20;
  size_t step_factor = 2;  // -f: multiply the size by this; 0: add step_bytes instead
  size_t step_bytes = 0;   // -i
  int iters = 20;          // -n
  int warmup = 5;          // -w
  bool check = true;       // -c
  psdp_dtype_t dtype = PSDP_FLOAT32;
  psdp_op_t op = PSDP_SUM;
  std::string json_path;  // -J
  bool help = false;
};

const char* usage();
// False with a message for a bad command line.
bool parseOptions(int argc, char** argv, Options* options, std::string* error);
size_t nextSize(const Options& o, size_t bytes);

// Prints nccl-tests' table to `out` (NULL on ranks other than 0) and, with -J, writes JSON at the end.
class Report {
 public:
  Report(const Options& options, int nranks, FILE* out) : o_(options), nranks_(nranks), out_(out) {}
  void header();
  void row(size_t count, double oop_us, long long oop_wrong, double ip_us, long long ip_wrong);
  // Prints the closing lines; returns the number of wrong elements seen in total.
  long long footer();

 private:
  struct Row {
    size_t bytes, count;
    double oop_us, oop_algbw, oop_busbw;
    long long oop_wrong;
    double ip_us, ip_algbw, ip_busbw;
    long long ip_wrong;
  };
  double busFactor() const;
  void writeJson() const;

  const Options& o_;
  int nranks_;
  FILE* out_;
  std::vector<Row> rows_;
};

}  // namespace psdp::perf
