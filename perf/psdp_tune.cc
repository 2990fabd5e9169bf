// psdp-tune: measures, for the interconnect it runs on, which algorithm, fragment size and depth serve each
// collective best at each size, and writes them as a tuning file (README, "Tuning") that communicators on the
// same interconnect then apply. Through the public API only: every setting swept is a communicator split
// from the world with that setting in its config (`algorithms`: one rule for every call), so nothing is
// measured that a user could not configure.
//
// Per collective and size, every candidate runs in each repetition, in an order rotated from one repetition
// to the next, and a repetition's time is the slowest rank's time per call (an all-reduce of the ranks'
// times): all ranks agree on every number, so on every winner. A size's winner has the least median over the
// repetitions; its rule serves from that size up to the next measured one.
//
//   psdp-run -n 2 -- psdp-tune -o tuning            full sweep (perf/README.md gives the figures)
//   psdp-run -n 2 -- psdp-tune --quick -o tuning    fewer candidates, sizes and repetitions
//   psdp-run -n 2 -- psdp-tune --verify tuning      fresh interleaved runs: the file against the built-in rules
//   psdp-run -n 2 -- psdp-tune --verify tuning --against full   and against another file (an exhaustive sweep's)
//   psdp-run -n 2 -- psdp-tune --model default ...  also the chunk engine's windows and grouping, on the
//                                                   pipelined step of a model-shaped state (tune_engine.h)
#include <psdp/psdp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "host_buffer.h"
#include "perf_options.h"
#include "tune_engine.h"
#include "tune_sweep.h"

namespace {

using psdp::perf::OpSweep;
using psdp::perf::TuneCandidate;
using psdp::perf::TuneOp;

[[noreturn]] void fail(psdp_comm_h comm, const char* what, psdp_status_t status) {
  std::fprintf(stderr, "psdp-tune: %s failed: %s: %s\n", what, psdp_status_string(status), psdp_get_last_error(comm));
  if (comm != nullptr) (void)psdp_comm_destroy(comm);
  std::exit(1);
}

#define TUNE_CHECK(comm, call)                                         \
  do {                                                                 \
    psdp_status_t tune_status_ = (call);                               \
    if (tune_status_ != PSDP_SUCCESS) fail(comm, #call, tune_status_); \
  } while (0)

struct TuneOptions {
  bool quick = false;
  size_t min_bytes = size_t{64} << 10;
  size_t max_bytes = size_t{256} << 20;
  size_t factor = 0;         // 0: 2, or 4 with --quick
  int repetitions = 0;       // 0: 5, or 3 with --quick
  double point_seconds = 0;  // 0: 0.05, or 0.02 with --quick
  std::vector<TuneOp> ops = {TuneOp::kAllReduce, TuneOp::kReduceScatter, TuneOp::kAllGather};
  bool huge_pages = false;
  bool shared_buffers = false;
  std::string out, json;
  std::string verify;   // a tuning file to check against the built-in rules instead of sweeping
  std::string against;  // with verify: a reference tuning file (an exhaustive sweep's) it must come close to
  // The engine sweep, with a shape file (--model): the state, and the plan chunk sizes (empty: the defaults).
  bool engine = false;
  psdp::perf::StepOptions step;
  std::vector<size_t> chunk_sizes;
};

const char* kUsage =
    "usage: psdp-tune [--quick | --verify FILE [--against REF]] [-o FILE] [--json FILE] [--ops ar,rs,ag]\n"
    "                 [-b MIN] [-e MAX] [-f FACTOR] [-r REPS] [--point-seconds S] [-H 0|1] [-R 0|1]\n"
    "  Run under a launcher (psdp-run -n N -- psdp-tune ...). Sweeps, per collective and size, the built-in\n"
    "  rules, rhd, direct (with and without CMA and streaming stores) and the ring over fragments of\n"
    "  64K-4M and depths 2-8, and writes the winners as a tuning file for this interconnect.\n"
    "  --quick           built-in, rhd, direct with CMA, ring 256K and 1M at depth 4; sizes x4; 3 repetitions\n"
    "  --verify FILE     no sweep: FILE's rules for this interconnect against the built-in rules, in fresh\n"
    "                    interleaved runs; exits 4 where FILE is over 5% slower at some size, 1 where\n"
    "                    FILE has no section for this interconnect\n"
    "  --against REF     with --verify: also REF's rules (the file of a separate, exhaustive sweep) and the\n"
    "                    built-in rules twice (their difference: the noise of the run), all interleaved; exits 4\n"
    "                    unless FILE is within 5% of REF at every size from 16M up, within 15% below, and\n"
    "                    nowhere over 5% slower than the built-in rules\n"
    "  -o FILE           the tuning file to write (default: print it)\n"
    "  --json FILE       every measurement, for tune_heatmap.py (perf/, installed in share/psdp/)\n"
    "  --ops LIST        collectives to sweep, of ar, rs, ag (default all three)\n"
    "  -b, -e            smallest and largest size, bytes of the whole buffer (K/M/G; default 64K, 256M)\n"
    "  -f FACTOR         each size FACTOR times the one before (default 2; --quick 4)\n"
    "  -r REPS           interleaved repetitions per candidate and size (default 5; --quick 3)\n"
    "  --point-seconds S time each measurement runs at least (default 0.05; --quick 0.02)\n"
    "  -H 0|1            1: buffers on transparent huge pages (default 0: small pages, what a framework's\n"
    "                    allocator hands over by default)\n"
    "  -R 0|1            1: buffers from psdp_mem_alloc, which direct collectives reach without CMA\n"
    "  The chunk engine (engine rules: windows and grouping per plan chunk size), with a shape file:\n"
    "  --model FILE      also sweep the engine on psdp-perf step's pipelined step of FILE's model (default:\n"
    "                    the installed qwen2.5.json) with Adam: windows 1-8 by groupings 1-16, transfers up to\n"
    "                    64M (--quick: windows 1-4 by groupings 1 and 4); with --verify, the file's engine rules\n"
    "  --name NAME       the model in FILE (default Qwen2.5-0.5B); --scale F: its tensors' leading dimension\n"
    "                    times F (0 < F <= 1)\n"
    "  --chunk-bytes LIST plan chunk sizes (default 1M,4M,16M,64M; --quick 4M,64M)\n"
    "  --ops none        the engine alone\n";

// Exits 2 with a message naming the argument on bad input.
TuneOptions parse(int argc, char** argv) {
  TuneOptions o;
  auto bad = [](const std::string& what) {
    std::fprintf(stderr, "psdp-tune: %s\n%s", what.c_str(), kUsage);
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) bad(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--verify") {
      o.verify = value();
    } else if (a == "--against") {
      o.against = value();
    } else if (a == "-o") {
      o.out = value();
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "-b" || a == "-e") {
      const char* v = value();
      size_t& bytes = a == "-b" ? o.min_bytes : o.max_bytes;
      if (!psdp::perf::parseSize(v, &bytes) || bytes == 0) bad(a + ": '" + v + "' is not a size");
    } else if (a == "-f") {
      o.factor = std::strtoul(value(), nullptr, 10);
      if (o.factor < 2) bad("-f: the factor must be 2 or more");
    } else if (a == "-r") {
      o.repetitions = std::atoi(value());
      if (o.repetitions < 1 || o.repetitions > 100) bad("-r: between 1 and 100 repetitions");
    } else if (a == "--point-seconds") {
      o.point_seconds = std::atof(value());
      if (!(o.point_seconds > 0 && o.point_seconds <= 10)) bad("--point-seconds: above 0 and at most 10");
    } else if (a == "-H" || a == "-R") {
      const std::string v = value();
      if (v != "0" && v != "1") bad(a + ": expected 0 or 1");
      (a == "-H" ? o.huge_pages : o.shared_buffers) = v == "1";
    } else if (a == "--model") {
      const std::string v = value();
      o.engine = true;
      o.step.model_path = v == "default" ? "" : v;
    } else if (a == "--name") {
      o.step.model_name = value();
    } else if (a == "--scale") {
      o.step.scale = std::atof(value());
      if (!(o.step.scale > 0 && o.step.scale <= 1)) bad("--scale: expected a number in (0, 1]");
    } else if (a == "--chunk-bytes") {
      const std::string list = value();
      for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        const std::string item = list.substr(start, comma - start);
        size_t bytes = 0;
        if (!psdp::perf::parseSize(item.c_str(), &bytes) || bytes == 0) {
          bad("--chunk-bytes: '" + item + "' is not a size");
        }
        o.chunk_sizes.push_back(bytes);
        start = comma + 1;
      }
      std::sort(o.chunk_sizes.begin(), o.chunk_sizes.end());
    } else if (a == "--ops") {
      o.ops.clear();
      std::string list = value();
      size_t start = 0;
      while (list != "none" && start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        const std::string op = list.substr(start, comma - start);
        if (op == "ar") {
          o.ops.push_back(TuneOp::kAllReduce);
        } else if (op == "rs") {
          o.ops.push_back(TuneOp::kReduceScatter);
        } else if (op == "ag") {
          o.ops.push_back(TuneOp::kAllGather);
        } else {
          bad("--ops: '" + op + "' is not ar, rs or ag (or the list none)");
        }
        start = comma + 1;
      }
    } else {
      bad("unknown argument '" + a + "'");
    }
  }
  if (o.factor == 0) o.factor = o.quick ? 4 : 2;
  if (o.repetitions == 0) o.repetitions = o.quick ? 3 : 5;
  if (o.point_seconds == 0) o.point_seconds = o.quick ? 0.02 : 0.05;
  if (o.min_bytes > o.max_bytes) bad("-b is above -e");
  if (!o.verify.empty() && (o.quick || !o.out.empty())) bad("--verify measures a file: no --quick, no -o");
  if (!o.against.empty() && o.verify.empty()) bad("--against REF: with --verify FILE, which it is measured beside");
  if (!o.against.empty() && o.engine) bad("--against compares collective rules: no --model");
  if (!o.engine &&
      (o.step.model_name != psdp::perf::StepOptions().model_name || o.step.scale != 1.0 || !o.chunk_sizes.empty())) {
    bad("--name, --scale and --chunk-bytes describe the engine sweep's state: add --model FILE (or default)");
  }
  if (o.ops.empty() && !o.engine) bad("--ops none: nothing to sweep without --model");
  if (o.chunk_sizes.empty()) o.chunk_sizes = psdp::perf::engineChunkSizes(o.quick);
  o.step.shared_buffers = o.shared_buffers;
  return o;
}

struct Job {
  psdp_comm_h world = nullptr;
  int rank = 0, nranks = 1;
  std::vector<psdp_comm_h> teams;  // one per candidate
  char* send = nullptr;
  char* recv = nullptr;
};

// One call of `op` over `bytes` of the whole buffer (float32); reduce-scatter and all-gather blocks are
// bytes / 4 / nranks floats, rounded down.
void call(const Job& job, psdp_comm_h team, TuneOp op, size_t bytes) {
  const size_t count = bytes / sizeof(float);
  const size_t block = count / static_cast<size_t>(job.nranks);
  switch (op) {
    case TuneOp::kAllReduce:
      TUNE_CHECK(team, psdp_all_reduce(job.send, job.recv, count, PSDP_FLOAT32, PSDP_SUM, team, nullptr, nullptr));
      break;
    case TuneOp::kReduceScatter:
      TUNE_CHECK(team, psdp_reduce_scatter(job.send, job.recv, block, PSDP_FLOAT32, PSDP_SUM, team, nullptr, nullptr));
      break;
    case TuneOp::kAllGather:
      TUNE_CHECK(team, psdp_all_gather(job.send, job.recv, block, PSDP_FLOAT32, team, nullptr, nullptr));
      break;
  }
}

// The slowest rank's seconds per call over `iterations` calls, after one untimed call. The ranks line up
// on the world first, so that no rank's time includes waiting for another to arrive.
double measure(const Job& job, psdp_comm_h team, TuneOp op, size_t bytes, int iterations) {
  call(job, team, op, bytes);
  int token = 0;
  TUNE_CHECK(job.world, psdp_all_reduce(&token, &token, 1, PSDP_INT32, PSDP_SUM, job.world, nullptr, nullptr));
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) call(job, team, op, bytes);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations;
  TUNE_CHECK(job.world, psdp_all_reduce(&seconds, &seconds, 1, PSDP_FLOAT64, PSDP_MAX, job.world, nullptr, nullptr));
  return seconds;
}

std::string interconnect(psdp_comm_h comm) {
  size_t len = 0;
  TUNE_CHECK(comm, psdp_comm_interconnect(comm, nullptr, &len));
  std::string text(len, '\0');
  TUNE_CHECK(comm, psdp_comm_interconnect(comm, text.data(), &len));
  text.resize(len - 1);
  return text;
}

// Whether `tuning_file` has a section for `signature`; says why not where it has none.
bool covers(const std::string& tuning_file, const std::string& signature) {
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  config.tuning_file = tuning_file.c_str();
  size_t len = 0;
  TUNE_CHECK(nullptr, psdp_algorithm_table_for(&config, signature.c_str(), nullptr, &len));
  std::string table(len, '\0');
  TUNE_CHECK(nullptr, psdp_algorithm_table_for(&config, signature.c_str(), table.data(), &len));
  const std::string first = table.substr(0, table.find('\n'));
  if (first.find(": the section of line") != std::string::npos) return true;
  std::fprintf(stderr, "psdp-tune: %s\n", first.c_str() + 2);
  return false;
}

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  const TuneOptions o = parse(argc, argv);
  Job job;
  // The sweep measures the candidates themselves: no tuning file of this machine may add its rules.
  psdp_config_t world_config = PSDP_CONFIG_INITIALIZER;
  world_config.tuning_file = "none";
  TUNE_CHECK(nullptr, psdp_comm_init_from_env(&world_config, &job.world));
  TUNE_CHECK(job.world, psdp_comm_rank(job.world, &job.rank));
  TUNE_CHECK(job.world, psdp_comm_size(job.world, &job.nranks));
  const std::string signature = interconnect(job.world);

  if ((!o.verify.empty() && !covers(o.verify, signature)) || (!o.against.empty() && !covers(o.against, signature))) {
    (void)psdp_comm_destroy(job.world);
    return 1;
  }
  const std::vector<TuneCandidate> candidates =
      o.verify.empty() ? psdp::perf::tuneCandidates(o.quick) : psdp::perf::verifyCandidates(o.verify, o.against);
  for (const TuneCandidate& candidate : candidates) {
    // Every setting the environment could add is fixed, so that each team runs its candidate alone.
    psdp_config_t config = PSDP_CONFIG_INITIALIZER;
    config.tuning_file = candidate.tuning_file.empty() ? "none" : candidate.tuning_file.c_str();
    config.algorithm = PSDP_ALGORITHM_AUTO;
    config.deterministic = 0;
    config.algorithms = candidate.rule.c_str();
    psdp_comm_h team = nullptr;
    TUNE_CHECK(job.world, psdp_comm_split(job.world, 0, job.rank, &config, &team));
    job.teams.push_back(team);
  }
  psdp::perf::HostBuffer send(o.max_bytes, o.huge_pages, o.shared_buffers);
  psdp::perf::HostBuffer recv(o.max_bytes, o.huge_pages, o.shared_buffers);
  if (send.data() == nullptr || recv.data() == nullptr) {
    std::fprintf(stderr, "psdp-tune: rank %d: cannot map 2 x %zu bytes of buffers\n", job.rank, o.max_bytes);
    return 1;
  }
  job.send = send.data();
  job.recv = recv.data();
  // Small integers: every sum stays exact and finite whatever the algorithm.
  for (size_t i = 0; i < o.max_bytes / sizeof(float); ++i) reinterpret_cast<float*>(job.send)[i] = 1.0f;

  const std::vector<size_t> all_sizes = psdp::perf::tuneSizes(o.min_bytes, o.max_bytes, o.factor);
  if (job.rank == 0) {
    std::printf("# psdp-tune: %d ranks, %s; %zu candidates, %zu sizes %zu-%zu bytes, %d repetitions; %s buffers\n",
                job.nranks, signature.c_str(), candidates.size(), all_sizes.size(), o.min_bytes, o.max_bytes,
                o.repetitions, o.shared_buffers ? "psdp_mem_alloc" : (o.huge_pages ? "huge-page" : "small-page"));
    std::fflush(stdout);
  }
  const auto began = std::chrono::steady_clock::now();
  std::vector<OpSweep> sweeps;
  for (TuneOp op : o.ops) {
    OpSweep sweep;
    sweep.op = op;
    // Sizes that give every rank a float at least; where nranks does not divide a size, the reduce-scatter
    // and all-gather blocks round down (call()), a few bytes of the whole.
    const size_t unit = sizeof(float) * static_cast<size_t>(job.nranks);
    for (size_t size : all_sizes) {
      if (size >= unit) sweep.sizes.push_back(size);
    }
    sweep.seconds.assign(candidates.size(), std::vector<std::vector<double>>(sweep.sizes.size()));
    for (size_t s = 0; s < sweep.sizes.size(); ++s) {
      // Enough calls per measurement to last point_seconds, judged by the built-in rules' time.
      const double estimate = measure(job, job.teams[0], op, sweep.sizes[s], 2);
      const int iterations = static_cast<int>(std::clamp(std::ceil(o.point_seconds / estimate), 1.0, 1000.0));
      for (int r = 0; r < o.repetitions; ++r) {
        for (size_t k = 0; k < candidates.size(); ++k) {
          const size_t c = (k + static_cast<size_t>(r)) % candidates.size();
          sweep.seconds[c][s].push_back(measure(job, job.teams[c], op, sweep.sizes[s], iterations));
        }
      }
    }
    if (job.rank == 0) {
      std::printf("# %s: %zu sizes swept, %.0f s so far\n", psdp::perf::tuneOpName(op), sweep.sizes.size(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
      std::fflush(stdout);
    }
    sweeps.push_back(std::move(sweep));
  }
  std::vector<psdp::perf::EngineSweep> engine;
  if (o.engine) {
    psdp::perf::EngineSweepOptions eo;
    eo.step = o.step;
    eo.chunk_sizes = o.chunk_sizes;
    eo.quick = o.quick;
    eo.repetitions = o.repetitions;
    eo.verify = !o.verify.empty();
    // Verifying, the state is registered on the team that loaded the file, whose engine rules then serve
    // the windows and grouping left at 0.
    engine = psdp::perf::sweepEngine(eo.verify ? job.teams[1] : job.world, eo, job.rank == 0);
  }

  int status = 0;
  if (job.rank == 0) {
    char when[64];
    const std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    std::string command = "psdp-tune";
    for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
    const std::vector<std::string> provenance = {command + ", " + std::to_string(job.nranks) + " ranks, " + when,
                                                 "the winner of each measured size serves up to the next; medians of " +
                                                     std::to_string(o.repetitions) +
                                                     " interleaved repetitions, each the slowest rank's time",
                                                 "sizes the built-in rules won have no rule"};
    const std::string tuning =
        psdp::perf::tuningFileText(provenance, signature, job.nranks, candidates, sweeps, engine);
    std::fputs(psdp::perf::sweepTable(job.nranks, candidates, sweeps).c_str(), stdout);
    std::fputs(psdp::perf::engineTable(job.nranks, engine).c_str(), stdout);
    if (!o.against.empty()) {
      std::fputs(psdp::perf::acceptanceTable(job.nranks, sweeps).c_str(), stdout);
      const psdp::perf::AcceptanceVerdict verdict = psdp::perf::judgeAgainstReference(sweeps);
      auto where = [](const psdp::perf::Slowdown& s) { return std::to_string(s.bytes) + " bytes of " + s.collective; };
      std::printf(
          "# %s against %s: at worst %.3fx its time from 16M up (%s), %.3fx below (%s); against the built-in "
          "rules at worst %.3fx (%s): %s; the built-in rules against their twin, the noise of this run, at worst "
          "%.3fx (%s)\n",
          o.verify.c_str(), o.against.c_str(), verdict.worst_large.ratio, where(verdict.worst_large).c_str(),
          verdict.worst_small.ratio, where(verdict.worst_small).c_str(), verdict.worst_builtin.ratio,
          where(verdict.worst_builtin).c_str(), verdict.passed() ? "passed" : "FAILED", verdict.noise.ratio,
          where(verdict.noise).c_str());
      if (!verdict.passed()) status = 4;
    } else if (!o.verify.empty()) {
      const psdp::perf::Slowdown worst = psdp::perf::worstSlowdown(sweeps, engine);
      std::printf("# %s against the built-in rules: at worst %.3fx their time (%s, %zu bytes)%s\n", o.verify.c_str(),
                  worst.ratio, worst.collective, worst.bytes,
                  worst.ratio > psdp::perf::kMinLead ? ": SLOWER beyond the noise" : "");
      if (worst.ratio > psdp::perf::kMinLead) status = 4;
    } else if (o.out.empty()) {
      std::fputs(tuning.c_str(), stdout);
    } else if (!writeFile(o.out, tuning)) {
      std::fprintf(stderr, "psdp-tune: cannot write %s: %s\n", o.out.c_str(), std::strerror(errno));
      status = 1;
    } else {
      std::printf("# wrote %s\n", o.out.c_str());
    }
    if (!o.json.empty() &&
        !writeFile(o.json, psdp::perf::sweepJson(signature, job.nranks, candidates, sweeps, engine))) {
      std::fprintf(stderr, "psdp-tune: cannot write %s: %s\n", o.json.c_str(), std::strerror(errno));
      status = 1;
    }
    std::printf("# swept in %.0f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  }
  for (psdp_comm_h team : job.teams) {
    TUNE_CHECK(team, psdp_comm_finalize(team));
    TUNE_CHECK(team, psdp_comm_destroy(team));
  }
  TUNE_CHECK(job.world, psdp_comm_finalize(job.world));
  TUNE_CHECK(job.world, psdp_comm_destroy(job.world));
  return status;
}
