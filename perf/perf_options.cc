#include "perf_options.h"

#include <getopt.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace psdp::perf {
namespace {

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "all_reduce";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kAllGather: return "all_gather";
  }
  return "?";
}

bool parseSize(const char* text, size_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text) return false;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift) ++end;
  if (*end != '\0' || (shift && v > (~0ull >> shift))) return false;
  *out = static_cast<size_t>(v << shift);
  return true;
}

bool parseInt(const char* text, int lo, int* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > 1000000000) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parseCollective(const char* text, Collective* out) {
  struct {
    const char* names[3];
    Collective c;
  } table[] = {
      {{"ar", "all_reduce", "allreduce"}, Collective::kAllReduce},
      {{"rs", "reduce_scatter", "reducescatter"}, Collective::kReduceScatter},
      {{"ag", "all_gather", "allgather"}, Collective::kAllGather},
  };
  for (const auto& row : table) {
    for (const char* name : row.names) {
      if (std::strcmp(text, name) == 0) {
        *out = row.c;
        return true;
      }
    }
  }
  return false;
}

bool parseOption(int opt, const char* arg, Options* o, std::string* error) {
  int value = 0;
  switch (opt) {
    case 'b':
      if (parseSize(arg, &o->min_bytes)) return true;
      *error = "-b: bad size";
      return false;
    case 'e':
      if (parseSize(arg, &o->max_bytes)) return true;
      *error = "-e: bad size";
      return false;
    case 'i':
      if (parseSize(arg, &o->step_bytes)) {
        o->step_factor = 0;
        return true;
      }
      *error = "-i: bad size";
      return false;
    case 'f':
      if (parseInt(arg, 2, &value)) {
        o->step_factor = static_cast<size_t>(value);
        return true;
      }
      *error = "-f: the factor must be an integer >= 2";
      return false;
    case 'n':
      if (parseInt(arg, 1, &o->iters)) return true;
      *error = "-n: iterations must be >= 1";
      return false;
    case 'w':
      if (parseInt(arg, 0, &o->warmup)) return true;
      *error = "-w: warmup must be >= 0";
      return false;
    case 'c':
      if (parseInt(arg, 0, &value)) {
        o->check = value != 0;
        return true;
      }
      *error = "-c: 0 or 1";
      return false;
    case 'd':
      if (!std::strcmp(arg, "float") || !std::strcmp(arg, "float32")) {
        o->dtype = PSDP_FLOAT32;
        return true;
      }
      if (!std::strcmp(arg, "int32") || !std::strcmp(arg, "int")) {
        o->dtype = PSDP_INT32;
        return true;
      }
      *error = std::string("-d: unsupported datatype '") + arg + "' (float, int32)";
      return false;
    case 'o':
      if (!std::strcmp(arg, "sum")) {
        o->op = PSDP_SUM;
        return true;
      }
      *error = std::string("-o: unsupported op '") + arg + "' (sum)";
      return false;
    case 'J': o->json_path = arg; return true;
    case 'h': o->help = true; return true;
    default: *error = "unknown option"; return false;
  }
}

}  // namespace

const char* usage() {
  return "usage: psdp-perf {ar|rs|ag} [options]   (run under psdp-run, torchrun, mpirun or srun)\n"
         "  -b, --minbytes SIZE   smallest size (total bytes, as nccl-tests), K/M/G suffixes (default 32M)\n"
         "  -e, --maxbytes SIZE   largest size (default 32M)\n"
         "  -f, --stepfactor N    multiply the size by N between steps (default 2)\n"
         "  -i, --stepbytes SIZE  add SIZE between steps instead\n"
         "  -n, --iters N         timed iterations per size (default 20)\n"
         "  -w, --warmup_iters N  untimed iterations first (default 5)\n"
         "  -c, --check 0|1       verify results exactly (default 1)\n"
         "  -d, --datatype T      float or int32 (default float)\n"
         "  -o, --op OP           reduction: sum (default)\n"
         "  -J, --output_file F   also write the results as JSON to F\n";
}

bool parseOptions(int argc, char** argv, Options* o, std::string* error) {
  static const option kLong[] = {{"minbytes", required_argument, nullptr, 'b'},
                                 {"maxbytes", required_argument, nullptr, 'e'},
                                 {"stepfactor", required_argument, nullptr, 'f'},
                                 {"stepbytes", required_argument, nullptr, 'i'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"warmup_iters", required_argument, nullptr, 'w'},
                                 {"check", required_argument, nullptr, 'c'},
                                 {"datatype", required_argument, nullptr, 'd'},
                                 {"op", required_argument, nullptr, 'o'},
                                 {"output_file", required_argument, nullptr, 'J'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  int first = 1;
  if (argc > 1 && argv[1][0] != '-') {
    if (!parseCollective(argv[1], &o->collective)) {
      *error = std::string("unknown collective '") + argv[1] + "' (ar, rs, ag)";
      return false;
    }
    first = 2;
  }
  optind = first;
  int opt;
  while ((opt = getopt_long(argc, argv, "b:e:f:i:n:w:c:d:o:J:h", kLong, nullptr)) != -1) {
    if (opt == '?') {
      *error = "bad option";
      return false;
    }
    if (!parseOption(opt, optarg, o, error)) return false;
  }
  if (optind != argc) {
    *error = std::string("unexpected argument '") + argv[optind] + "'";
    return false;
  }
  if (o->min_bytes > o->max_bytes) {
    *error = "-b is larger than -e";
    return false;
  }
  if (o->step_factor == 0 && o->step_bytes == 0) {
    *error = "-i must be positive";
    return false;
  }
  return true;
}

size_t nextSize(const Options& o, size_t bytes) {
  size_t next = o.step_factor ? bytes * o.step_factor : bytes + o.step_bytes;
  if (next <= bytes || next > o.max_bytes) return o.max_bytes > bytes ? o.max_bytes : bytes + 1;
  return next;
}

double Report::busFactor() const {
  double n = nranks_;
  return o_.collective == Collective::kAllReduce ? 2.0 * (n - 1) / n : (n - 1) / n;
}

void Report::header() {
  if (!out_) return;
  std::fprintf(out_, "# psdp-perf %s: %d ranks, %s, %s, %d iterations, %d warmup, check %s\n",
               collectiveName(o_.collective), nranks_, o_.dtype == PSDP_FLOAT32 ? "float" : "int32", "sum", o_.iters,
               o_.warmup, o_.check ? "on" : "off");
  std::fprintf(out_, "#\n");
  std::fprintf(out_, "# %10s  %12s  %8s  %6s  %6s  %36s  %36s\n", "", "", "", "", "", "out-of-place", "in-place");
  std::fprintf(out_, "# %10s  %12s  %8s  %6s  %6s  %9s %8s %8s %7s  %9s %8s %8s %7s\n", "size", "count", "type",
               "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::fprintf(out_, "# %10s  %12s  %8s  %6s  %6s  %9s %8s %8s %7s  %9s %8s %8s %7s\n", "(B)", "(elements)", "", "", "",
               "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(out_);
}

void Report::row(size_t count, double oop_us, long long oop_wrong, double ip_us, long long ip_wrong) {
  // nccl-tests reports the size of the whole vector: count * nranks for reduce-scatter and all-gather.
  size_t total = o_.collective == Collective::kAllReduce ? count : count * nranks_;
  size_t bytes = total * 4;
  Row r{bytes, total, oop_us, bytes / oop_us / 1e3, 0, oop_wrong, ip_us, bytes / ip_us / 1e3, 0, ip_wrong};
  r.oop_busbw = r.oop_algbw * busFactor();
  r.ip_busbw = r.ip_algbw * busFactor();
  rows_.push_back(r);
  if (!out_) return;
  std::string oop = o_.check ? std::to_string(oop_wrong) : "N/A";
  std::string ip = o_.check ? std::to_string(ip_wrong) : "N/A";
  std::fprintf(out_, "  %10zu  %12zu  %8s  %6s  %6d  %9.1f %8.2f %8.2f %7s  %9.1f %8.2f %8.2f %7s\n", bytes, total,
               o_.dtype == PSDP_FLOAT32 ? "float" : "int32", o_.collective == Collective::kAllGather ? "none" : "sum",
               -1, oop_us, r.oop_algbw, r.oop_busbw, oop.c_str(), ip_us, r.ip_algbw, r.ip_busbw, ip.c_str());
  std::fflush(out_);
}

long long Report::footer() {
  long long wrong = 0;
  double busbw_sum = 0;
  for (const Row& r : rows_) {
    wrong += r.oop_wrong + r.ip_wrong;
    busbw_sum += (r.oop_busbw + r.ip_busbw) / 2;
  }
  if (out_) {
    std::fprintf(out_, "# Out of bounds values : %lld %s\n", wrong, wrong == 0 ? "OK" : "FAILED");
    std::fprintf(out_, "# Avg bus bandwidth    : %g\n", rows_.empty() ? 0.0 : busbw_sum / rows_.size());
    std::fprintf(out_, "#\n");
    if (!o_.json_path.empty()) writeJson();
  }
  return wrong;
}

void Report::writeJson() const {
  FILE* f = std::fopen(o_.json_path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "psdp-perf: cannot write %s: %s\n", o_.json_path.c_str(), std::strerror(errno));
    return;
  }
  std::fprintf(f, "{\"collective\": \"%s\", \"nranks\": %d, \"dtype\": \"%s\", \"iters\": %d, \"results\": [",
               collectiveName(o_.collective), nranks_, o_.dtype == PSDP_FLOAT32 ? "float" : "int32", o_.iters);
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    std::fprintf(f,
                 "%s\n  {\"size\": %zu, \"count\": %zu, \"out_of_place\": {\"time_us\": %.3f, \"algbw\": %.4f, "
                 "\"busbw\": %.4f, \"wrong\": %lld}, \"in_place\": {\"time_us\": %.3f, \"algbw\": %.4f, "
                 "\"busbw\": %.4f, \"wrong\": %lld}}",
                 i ? "," : "", r.bytes, r.count, r.oop_us, r.oop_algbw, r.oop_busbw, r.oop_wrong, r.ip_us, r.ip_algbw,
                 r.ip_busbw, r.ip_wrong);
  }
  std::fprintf(f, "\n]}\n");
  std::fclose(f);
}

}  // namespace psdp::perf
