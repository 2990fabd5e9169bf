#include "perf_options.h"

#include <getopt.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "host_buffer.h"

namespace psdp::perf {

bool parseSize(const char* text, size_t* out) {
  char* end = nullptr;
  errno = 0;
  if (*text == '-') return false;  // strtoull would silently wrap a negative size
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

bool parseInt(const char* text, int lo, int hi, int* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

namespace {

// printf into a string, for table columns formatted one way or another.
template <typename... Args>
std::string fmt(const char* format, Args... args) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), format, args...);
  return buf;
}

bool parseCollective(const char* text, Collective* out) {
  // Short names, and the binary names of nccl-tests so that its command lines work unchanged.
  struct {
    const char* names[4];
    Collective c;
  } table[] = {
      {{"ar", "all_reduce", "allreduce", "all_reduce_perf"}, Collective::kAllReduce},
      {{"rs", "reduce_scatter", "reducescatter", "reduce_scatter_perf"}, Collective::kReduceScatter},
      {{"ag", "all_gather", "allgather", "all_gather_perf"}, Collective::kAllGather},
      {{"bcast", "broadcast", "bc", "broadcast_perf"}, Collective::kBroadcast},
      {{"reduce", "reduce_perf", nullptr, nullptr}, Collective::kReduce},
      {{"gather", "gather_perf", nullptr, nullptr}, Collective::kGather},
      {{"scatter", "scatter_perf", nullptr, nullptr}, Collective::kScatter},
      {{"a2a", "alltoall", "all_to_all", "alltoall_perf"}, Collective::kAllToAll},
      {{"sendrecv", "sr", "send_recv", "sendrecv_perf"}, Collective::kSendRecv},
  };
  for (const auto& row : table) {
    for (const char* name : row.names) {
      if (name != nullptr && std::strcmp(text, name) == 0) {
        *out = row.c;
        return true;
      }
    }
  }
  return false;
}

struct DtypeName {
  const char* name;
  psdp_dtype_t dtype;
};
// The first spelling of each dtype is the one printed; the others are nccl-tests' aliases.
constexpr DtypeName kDtypes[] = {
    {"int8", PSDP_INT8},      {"char", PSDP_INT8},       {"uint8", PSDP_UINT8},     {"int32", PSDP_INT32},
    {"int", PSDP_INT32},      {"uint32", PSDP_UINT32},   {"int64", PSDP_INT64},     {"uint64", PSDP_UINT64},
    {"half", PSDP_FLOAT16},   {"float16", PSDP_FLOAT16}, {"fp16", PSDP_FLOAT16},    {"bfloat16", PSDP_BFLOAT16},
    {"bf16", PSDP_BFLOAT16},  {"float", PSDP_FLOAT32},   {"float32", PSDP_FLOAT32}, {"fp32", PSDP_FLOAT32},
    {"double", PSDP_FLOAT64}, {"float64", PSDP_FLOAT64}, {"fp64", PSDP_FLOAT64},
};

constexpr const char* kReductionNames[] = {"sum", "prod", "min", "max", "avg", "premulsum"};

bool parseDtype(const char* text, std::vector<psdp_dtype_t>* out) {
  if (!std::strcmp(text, "all")) {
    out->clear();
    for (int d = 0; d < PSDP_NUM_DTYPES; ++d) out->push_back(static_cast<psdp_dtype_t>(d));
    return true;
  }
  for (const DtypeName& d : kDtypes) {
    if (!std::strcmp(text, d.name)) {
      *out = {d.dtype};
      return true;
    }
  }
  return false;
}

bool parseReduction(const char* text, std::vector<Reduction>* out) {
  if (!std::strcmp(text, "all")) {
    out->clear();
    for (int r = 0; r <= static_cast<int>(Reduction::kPremulSum); ++r) out->push_back(static_cast<Reduction>(r));
    return true;
  }
  for (int r = 0; r <= static_cast<int>(Reduction::kPremulSum); ++r) {
    if (!std::strcmp(text, kReductionNames[r])) {
      *out = {static_cast<Reduction>(r)};
      return true;
    }
  }
  return false;
}

bool parseOption(int opt, const char* arg, Options* o, std::string* error) {
  int value = 0;
  auto bad = [&](const char* what) {
    *error = std::string(what) + ", got '" + (arg ? arg : "") + "'";
    return false;
  };
  switch (opt) {
    case 'b': return parseSize(arg, &o->min_bytes) || bad("-b: expected a size such as 1024, 64K, 1M or 1G");
    case 'e': return parseSize(arg, &o->max_bytes) || bad("-e: expected a size such as 1024, 64K, 1M or 1G");
    case 'i':
      if (!parseSize(arg, &o->step_bytes) || o->step_bytes == 0) return bad("-i: expected a positive size");
      o->step_factor = 0;
      return true;
    case 'f':
      if (!parseInt(arg, 2, 1 << 20, &value)) return bad("-f: the factor must be an integer >= 2");
      o->step_factor = static_cast<size_t>(value);
      return true;
    case 'n': return parseInt(arg, 1, 1000000000, &o->iters) || bad("-n: iterations must be an integer >= 1");
    case 'w': return parseInt(arg, 0, 1000000000, &o->warmup) || bad("-w: warmup must be an integer >= 0");
    case 'm':
      return parseInt(arg, 1, 1024, &o->agg) || bad("-m: aggregated operations must be an integer in [1, 1024]");
    case 'c':
      if (!parseInt(arg, 0, 1, &value)) return bad("-c: expected 0 or 1");
      o->check = value != 0;
      return true;
    case 'r': return parseInt(arg, 0, 1 << 30, &o->root) || bad("-r: the root must be an integer >= 0");
    case 'z':
      if (!parseInt(arg, 0, 1, &value)) return bad("-z: expected 0 or 1");
      o->blocking = value != 0;
      return true;
    case 'H':
      if (!parseInt(arg, 0, 1, &value)) return bad("-H: expected 0 or 1");
      o->huge_pages = value != 0;
      return true;
    case 'R':
      if (!parseInt(arg, 0, 1, &value)) return bad("-R: expected 0 or 1");
      o->shared_buffers = value != 0;
      return true;
    case 'g':
    case 't':
      // nccl-tests' GPUs and threads per process: psdp-perf is one rank per process, so only 1 makes sense.
      return parseInt(arg, 1, 1, &value) || bad("-g/-t: psdp-perf runs one rank per process; only 1 is accepted");
    case 'd':
      return parseDtype(arg, &o->dtypes) ||
             bad("-d: unknown datatype (int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double all)");
    case 'o': return parseReduction(arg, &o->ops) || bad("-o: unknown op (sum prod min max avg premulsum all)");
    case 'J':
      if (!arg || !*arg) return bad("-J: expected a file name");
      o->json_path = arg;
      return true;
    case kWaitEachOption:
      if (!parseInt(arg, 0, 1, &value)) return bad("--wait_each: expected 0 or 1");
      o->wait_each = value != 0;
      return true;
    case kMinBusbwOption: {
      char* end = nullptr;
      errno = 0;
      const double value = arg ? std::strtod(arg, &end) : 0;
      if (!arg || end == arg || *end != '\0' || errno != 0 || !(value > 0) || value > 1e6) {
        return bad("--min_busbw: expected a bandwidth in GB/s above 0");
      }
      o->min_busbw = value;
      return true;
    }
    case 'h': o->help = true; return true;
    default: *error = "unknown option"; return false;
  }
}

}  // namespace

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "all_reduce";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kAllGather: return "all_gather";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kReduce: return "reduce";
    case Collective::kGather: return "gather";
    case Collective::kScatter: return "scatter";
    case Collective::kAllToAll: return "alltoall";
    case Collective::kSendRecv: return "sendrecv";
  }
  return "?";
}

const char* dtypeName(psdp_dtype_t dtype) {
  for (const DtypeName& d : kDtypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

size_t dtypeBytes(psdp_dtype_t dtype) {
  switch (dtype) {
    case PSDP_INT8:
    case PSDP_UINT8: return 1;
    case PSDP_FLOAT16:
    case PSDP_BFLOAT16: return 2;
    case PSDP_INT32:
    case PSDP_UINT32:
    case PSDP_FLOAT32: return 4;
    case PSDP_INT64:
    case PSDP_UINT64:
    case PSDP_FLOAT64: return 8;
    default: return 0;
  }
}

const char* reductionName(Reduction r) {
  return kReductionNames[static_cast<int>(r)];
}

bool reduces(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}
bool rooted(Collective c) {
  return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kGather ||
         c == Collective::kScatter;
}
bool hasInPlace(Collective c) {
  return c != Collective::kAllToAll && c != Collective::kSendRecv;
}

double busFactor(Collective c, int nranks) {
  double n = nranks;
  switch (c) {
    case Collective::kAllReduce: return 2.0 * (n - 1) / n;
    case Collective::kReduceScatter:
    case Collective::kAllGather:
    case Collective::kGather:
    case Collective::kScatter:
    case Collective::kAllToAll: return (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv: return 1.0;
  }
  return 1.0;
}

const char* usage() {
  return "usage: psdp-perf {ar|rs|ag|bcast|reduce|gather|scatter|a2a|sendrecv} [options]\n"
         "  (run under psdp-run, torchrun, mpirun or srun). The collective may also be given as nccl-tests names\n"
         "  it: all_reduce_perf, reduce_scatter_perf, all_gather_perf, broadcast_perf, reduce_perf, gather_perf,\n"
         "  scatter_perf, alltoall_perf, sendrecv_perf (each rank sends to the next and receives from the one\n"
         "  before). psdp-perf step [options] times a whole sharded training step instead (psdp-perf step --help).\n"
         "  -b, --minbytes SIZE   smallest size (total bytes, as nccl-tests), K/M/G suffixes (default 32M)\n"
         "  -e, --maxbytes SIZE   largest size (default 32M)\n"
         "  -f, --stepfactor N    multiply the size by N between steps (default 2)\n"
         "  -i, --stepbytes SIZE  add SIZE between steps instead\n"
         "  -n, --iters N         timed iterations per size (default 20)\n"
         "  -w, --warmup_iters N  untimed iterations first (default 5)\n"
         "  -m, --agg_iters N     operations in flight per iteration (default 1): N nonblocking calls on\n"
         "                        disjoint buffers, posted back to back, then waited for with one\n"
         "                        psdp_request_wait_all; time is per call\n"
         "  --wait_each 0|1       1: wait for -m's requests with one psdp_request_wait each (default 0)\n"
         "  -c, --check 0|1       verify results exactly (default 1)\n"
         "  -d, --datatype T      int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double, or all\n"
         "                        (default float)\n"
         "  -o, --op OP           sum prod min max avg premulsum, or all (default sum)\n"
         "  -r, --root R          root of bcast, reduce, gather, scatter (default 0)\n"
         "  -z, --blocking 0|1    1: blocking calls (default); 0: nonblocking requests, waited on at once\n"
         "  -H, --huge_pages 0|1  0: small pages (default), what a framework's allocator hands over unless\n"
         "                        told otherwise; 1: ask for transparent huge pages for the buffers (madvise)\n"
         "  -R, --local_register 0|1  1: buffers from psdp_mem_alloc, which psdp's direct collectives reach\n"
         "                        from the other ranks of the host (as nccl-tests -R registers them); 0:\n"
         "                        private memory (default)\n"
         "  -g, -t 1              accepted for nccl-tests command lines; psdp-perf is one rank per process\n"
         "  -J, --output_file F   also write the results as JSON to F\n"
         "  --min_busbw X         a regression gate: exit 4 if any size's busbw (out-of-place or in-place,\n"
         "                        GB/s, the slowest rank's) is below X; the rows below it are listed\n"
         "exit status: 0 ok, 1 wrong results or a failed call, 2 bad command line,\n"
         "             3 a requested dtype/op/collective is unsupported by this build of psdp,\n"
         "             4 busbw below --min_busbw (results right)\n";
}

bool parseOptions(int argc, char** argv, Options* o, std::string* error) {
  static const option kLong[] = {{"minbytes", required_argument, nullptr, 'b'},
                                 {"maxbytes", required_argument, nullptr, 'e'},
                                 {"stepfactor", required_argument, nullptr, 'f'},
                                 {"stepbytes", required_argument, nullptr, 'i'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"warmup_iters", required_argument, nullptr, 'w'},
                                 {"agg_iters", required_argument, nullptr, 'm'},
                                 {"check", required_argument, nullptr, 'c'},
                                 {"datatype", required_argument, nullptr, 'd'},
                                 {"op", required_argument, nullptr, 'o'},
                                 {"root", required_argument, nullptr, 'r'},
                                 {"blocking", required_argument, nullptr, 'z'},
                                 {"huge_pages", required_argument, nullptr, 'H'},
                                 {"local_register", required_argument, nullptr, 'R'},
                                 {"ngpus", required_argument, nullptr, 'g'},
                                 {"nthreads", required_argument, nullptr, 't'},
                                 {"output_file", required_argument, nullptr, 'J'},
                                 {"min_busbw", required_argument, nullptr, kMinBusbwOption},
                                 {"wait_each", required_argument, nullptr, kWaitEachOption},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  int first = 1;
  if (argc > 1 && argv[1][0] != '-') {
    if (!parseCollective(argv[1], &o->collective)) {
      *error = std::string("unknown collective '") + argv[1] +
               "' (ar, rs, ag, bcast, reduce, gather, scatter, a2a, sendrecv, nccl-tests' *_perf names, or step)";
      return false;
    }
    first = 2;
  }
  optind = first;
  opterr = 0;  // the message below names the option; getopt's own would go to stderr on every rank
  int opt;
  while ((opt = getopt_long(argc, argv, ":b:e:f:i:n:w:m:c:d:o:r:z:H:R:g:t:J:h", kLong, nullptr)) != -1) {
    if (opt == '?' || opt == ':') {
      std::string name = optopt ? std::string("-") + static_cast<char>(optopt) : std::string(argv[optind - 1]);
      *error = opt == ':' ? "option " + name + " needs a value" : "unknown option " + name;
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
  if (!reduces(o->collective)) {
    // These do not reduce: one row per dtype, as nccl-tests prints "none".
    o->ops = {Reduction::kSum};
  }
  return true;
}

size_t nextSize(const Options& o, size_t bytes) {
  size_t next = o.step_factor ? bytes * o.step_factor : bytes + o.step_bytes;
  // Zero would never grow by a factor: step from 0 to 1 byte, as nccl-tests does not get stuck either.
  if (next == bytes) next = bytes + 1;
  if (next < bytes) return o.max_bytes + 1;  // overflow: done
  return next;
}

void Report::header() {
  if (!out_) return;
  std::fprintf(
      out_, "# psdp-perf %s: %d ranks, %d iterations, %d warmup, %d in flight, check %s, %s calls, %s (THP mode %s)\n",
      collectiveName(o_.collective), nranks_, o_.iters, o_.warmup, o_.agg, o_.check ? "on" : "off",
      o_.agg > 1 ? (o_.wait_each ? "nonblocking (waited each)" : "nonblocking (waited all at once)")
                 : (o_.blocking ? "blocking" : "nonblocking"),
      o_.shared_buffers ? "psdp_mem_alloc buffers" : (o_.huge_pages ? "huge pages (-H 1)" : "small pages"),
      transparentHugePageMode().c_str());
  std::fprintf(out_, "#\n");
  std::fprintf(out_, "# %10s  %12s  %8s  %9s  %6s  %36s  %36s\n", "", "", "", "", "", "out-of-place", "in-place");
  std::fprintf(out_, "# %10s  %12s  %8s  %9s  %6s  %9s %8s %8s %7s  %9s %8s %8s %7s\n", "size", "count", "type",
               "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::fprintf(out_, "# %10s  %12s  %8s  %9s  %6s  %9s %8s %8s %7s  %9s %8s %8s %7s\n", "(B)", "(elements)", "", "", "",
               "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(out_);
}

void Report::row(size_t total_count, psdp_dtype_t dtype, const char* redop, int root, double oop_us,
                 long long oop_wrong, double ip_us, long long ip_wrong) {
  Row r;
  r.bytes = total_count * dtypeBytes(dtype);
  r.count = total_count;
  r.dtype = dtype;
  r.redop = redop;
  r.root = root;
  double factor = busFactor(o_.collective, nranks_);
  // GB/s = bytes / us / 1e3, as nccl-tests; a zero-byte row has no bandwidth rather than a division by zero.
  r.oop_us = oop_us;
  r.oop_algbw = oop_us > 0 ? r.bytes / oop_us / 1e3 : 0;
  r.oop_busbw = r.oop_algbw * factor;
  r.oop_wrong = oop_wrong;
  r.ip_us = ip_us;
  r.ip_algbw = ip_us > 0 ? r.bytes / ip_us / 1e3 : 0;
  r.ip_busbw = r.ip_algbw * factor;
  r.ip_wrong = ip_wrong;
  rows_.push_back(r);
  if (!out_) return;
  std::string oop = o_.check ? std::to_string(oop_wrong) : "N/A";
  std::string ip = o_.check ? std::to_string(ip_wrong) : "N/A";
  std::string ip_columns = fmt(" %9.1f %8.2f %8.2f %7s", ip_us, r.ip_algbw, r.ip_busbw, ip.c_str());
  if (!hasInPlace(o_.collective)) ip_columns = fmt(" %9s %8s %8s %7s", "N/A", "N/A", "N/A", "N/A");
  std::fprintf(out_, "  %10zu  %12zu  %8s  %9s  %6d  %9.1f %8.2f %8.2f %7s %s\n", r.bytes, r.count, dtypeName(dtype),
               redop, root, oop_us, r.oop_algbw, r.oop_busbw, oop.c_str(), ip_columns.c_str());
  std::fflush(out_);
}

void Report::unsupported(psdp_dtype_t dtype, const char* redop, const std::string& why) {
  std::string line = std::string(collectiveName(o_.collective)) + " " + dtypeName(dtype) + " " + redop +
                     ": unsupported by this build of psdp: " + why;
  skipped_.push_back(line);
  if (!out_) return;
  std::fprintf(out_, "# %s\n", line.c_str());
  std::fprintf(stderr, "psdp-perf: %s\n", line.c_str());
  std::fflush(out_);
}

long long Report::wrong() const {
  long long wrong = 0;
  for (const Row& r : rows_) wrong += r.oop_wrong + r.ip_wrong;
  return wrong;
}

std::vector<std::string> Report::belowGate() const {
  std::vector<std::string> below;
  if (o_.min_busbw <= 0) return below;
  for (const Row& r : rows_) {
    auto check = [&](double busbw, const char* place) {
      if (busbw < o_.min_busbw) {
        below.push_back(fmt("%zu B %s %s %s: %.2f GB/s", r.bytes, dtypeName(r.dtype), r.redop, place, busbw));
      }
    };
    check(r.oop_busbw, "out-of-place");
    if (hasInPlace(o_.collective)) check(r.ip_busbw, "in-place");
  }
  return below;
}

bool Report::footer() {
  long long bad = wrong();
  double busbw_sum = 0;
  for (const Row& r : rows_) busbw_sum += hasInPlace(o_.collective) ? (r.oop_busbw + r.ip_busbw) / 2 : r.oop_busbw;
  if (!out_) return true;
  std::fprintf(out_, "# Out of bounds values : %lld %s\n", bad, bad == 0 ? "OK" : "FAILED");
  std::fprintf(out_, "# Avg bus bandwidth    : %g \n", rows_.empty() ? 0.0 : busbw_sum / rows_.size());
  if (o_.min_busbw > 0) {
    std::vector<std::string> below = belowGate();
    std::fprintf(out_, "# Below --min_busbw %g : %zu %s\n", o_.min_busbw, below.size(),
                 below.empty() ? "OK" : "FAILED");
    for (const std::string& line : below) std::fprintf(out_, "#   %s\n", line.c_str());
  }
  std::fprintf(out_, "#\n");
  std::fflush(out_);
  return o_.json_path.empty() || writeJson();
}

namespace {
// The messages come from psdp_get_last_error and may hold quotes or backslashes.
std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}
}  // namespace

bool Report::writeJson() const {
  FILE* f = std::fopen(o_.json_path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "psdp-perf: cannot write %s: %s\n", o_.json_path.c_str(), std::strerror(errno));
    return false;
  }
  std::fprintf(
      f, "{\"collective\": \"%s\", \"nranks\": %d, \"iters\": %d, \"warmup\": %d, \"agg_iters\": %d, \"check\": %s,\n",
      collectiveName(o_.collective), nranks_, o_.iters, o_.warmup, o_.agg, o_.check ? "true" : "false");
  std::fprintf(f, " \"buffers\": \"%s\", \"thp_mode\": \"%s\",\n",
               o_.shared_buffers ? "psdp_mem_alloc" : (o_.huge_pages ? "huge pages" : "small pages"),
               transparentHugePageMode().c_str());
  std::fprintf(f, " \"busbw_factor\": %.6f, \"unsupported\": [", busFactor(o_.collective, nranks_));
  for (size_t i = 0; i < skipped_.size(); ++i) std::fprintf(f, "%s%s", i ? ", " : "", jsonString(skipped_[i]).c_str());
  std::fprintf(f, "],\n \"min_busbw\": %g, \"below_min_busbw\": [", o_.min_busbw);
  std::vector<std::string> below = belowGate();
  for (size_t i = 0; i < below.size(); ++i) std::fprintf(f, "%s%s", i ? ", " : "", jsonString(below[i]).c_str());
  std::fprintf(f, "],\n \"results\": [");
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    std::fprintf(f,
                 "%s\n  {\"size\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": \"%s\", \"root\": %d,"
                 " \"out_of_place\": {\"time_us\": %.3f, \"algbw\": %.4f, \"busbw\": %.4f, \"wrong\": %lld},"
                 " \"in_place\": {\"time_us\": %.3f, \"algbw\": %.4f, \"busbw\": %.4f, \"wrong\": %lld}}",
                 i ? "," : "", r.bytes, r.count, dtypeName(r.dtype), r.redop, r.root, r.oop_us, r.oop_algbw,
                 r.oop_busbw, o_.check ? r.oop_wrong : -1, r.ip_us, r.ip_algbw, r.ip_busbw, o_.check ? r.ip_wrong : -1);
  }
  std::fprintf(f, "\n]}\n");
  bool ok = std::ferror(f) == 0;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) std::fprintf(stderr, "psdp-perf: writing %s failed\n", o_.json_path.c_str());
  return ok;
}

}  // namespace psdp::perf
