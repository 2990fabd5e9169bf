// psdp-tune's measurements and what it makes of them, apart from the calls that take them (psdp_tune.cc), so
// that tests/perf can check them: the candidate settings, the sizes, the winner of each size by the median
// of its interleaved repetitions, and the tuning file, table and JSON written from the sweep.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace psdp::perf {

// One setting swept: a rule for every collective, as a communicator's PSDP_ALGORITHMS (the config's
// `algorithms` field) gives it, and the same as a tuning file's fields.
struct TuneCandidate {
  std::string name;         // "ring 256K x4", "direct cma", "built-in"
  std::string rule;         // "*:0-=ring,fragment=256K,depth=4"; empty: the built-in rules alone
  std::string fields;       // "algorithm=ring fragment=256K depth=4"; empty for the built-in rules
  std::string tuning_file;  // a tuning file the candidate's communicator applies (psdp-tune --verify)
};

// The built-in rules first (the untuned defaults, which the tuned file must never lose to), then recursive
// halving/doubling, direct with and without CMA and streaming stores, and the ring over fragments and depths.
// quick: only the ring's 256K and 1M fragments at depth 4 (the built-in depth), and direct with CMA only:
// the settings that won somewhere in full sweeps on this project's machines.
std::vector<TuneCandidate> tuneCandidates(bool quick);
// psdp-tune --verify: the built-in rules against the rules of `tuning_file` for this interconnect, and with
// `reference` (--against; empty: none) that file's rules and the built-in rules once more (their twin, whose
// difference from the first is the noise of the run).
std::vector<TuneCandidate> verifyCandidates(const std::string& tuning_file, const std::string& reference = "");

// From `min` to `max` bytes, each `factor` times the one before (max included when the steps reach it).
std::vector<size_t> tuneSizes(size_t min, size_t max, size_t factor);
// A size as a tuning file writes it: "4M", "256K", or bytes.
std::string sizeText(size_t bytes);

enum class TuneOp { kAllReduce, kReduceScatter, kAllGather };
const char* tuneOpName(TuneOp op);            // "all-reduce", as a tuning file names it
const char* tuneOpShortName(TuneOp op);       // "ar", as psdp-perf names it
double tuneBusFactor(TuneOp op, int nranks);  // busbw / algbw, nccl-tests' factors

// One collective's sweep: seconds[c][s][r] is repetition r of candidate c at size s, the slowest rank's time
// per call.
struct OpSweep {
  TuneOp op = TuneOp::kAllReduce;
  std::vector<size_t> sizes;
  std::vector<std::vector<std::vector<double>>> seconds;

  double median(size_t candidate, size_t size) const;
  // The candidate with the least median time at a size, where it leads the built-in rules (candidate 0)
  // by kMinLead and was faster than they were in kMinWinShare of the repetitions (each repetition runs
  // every candidate back to back, so these pairs see the same state of the machine); else the built-in
  // rules.
  size_t winner(size_t size) const;
};

double medianOf(std::vector<double> values);
// Of candidates' repetitions, the built-in's first and each repetition of every candidate taken back to back:
// the candidate with the least median, where it leads the built-in by kMinLead and was faster than it in
// kMinWinShare of the repetitions; else 0, the built-in. A candidate without repetitions never wins.
size_t winnerOf(const std::vector<const std::vector<double>*>& seconds);

// One setting of the chunk engine swept on a model-shaped pipelined step (perf/step_bench.h): the windows
// (reduce and gather alike) and the grouping of plan chunks per transfer, as psdp_step_config_t asks for
// them. Both 0: what the tuning file's engine rule says (psdp-tune --verify's "tuned").
struct EngineCandidate {
  size_t window = 0;
  size_t grouping = 0;

  std::string name() const;  // "window 4 x2", "tuned"
  bool operator==(const EngineCandidate& other) const { return window == other.window && grouping == other.grouping; }
};
// What a step without a tuning file runs (psdp.h, psdp_step_config_t).
inline constexpr EngineCandidate kBuiltInEngine = {2, 1};

// The plan chunk sizes swept: 1M, 4M, 16M and 64M (the plan's default); quick: 4M and 64M.
std::vector<size_t> engineChunkSizes(bool quick);
// The candidates at one plan chunk size, the built-in first: windows 1, 2, 4 and 8 by groupings 1, 2, 4, 8
// and 16, pruned to transfers (chunk x grouping) of at most 64 MiB, the plan's default chunk (grouping is
// there to make small chunks' collectives larger, not to rebuild bulk mode); quick: windows 1, 2 and 4 by
// groupings 1 and 4, pruned alike.
std::vector<EngineCandidate> engineCandidates(bool quick, size_t chunk_bytes);

// The engine's sweep at one plan chunk size: seconds[c][r] is repetition r of candidate c, the slowest
// rank's seconds per step.
struct EngineSweep {
  size_t chunk_bytes = 0;
  size_t chunks = 0;  // of the plan
  std::vector<EngineCandidate> candidates;
  std::vector<std::vector<double>> seconds;

  double median(size_t candidate) const { return medianOf(seconds[candidate]); }
  size_t winner() const;  // as winnerOf
};

// For --verify: the largest slowdown of candidate 1 (the tuned rules) against candidate 0 (the built-in
// ones) over every size of every sweep, as the ratio of their medians (1.02: 2% slower), and where
// (collective "engine": bytes is the plan's chunk size).
struct Slowdown {
  double ratio = 0;
  const char* collective = "";
  size_t bytes = 0;
};
Slowdown worstSlowdown(const std::vector<OpSweep>& sweeps, const std::vector<EngineSweep>& engine);

// How much faster than the built-in rules a candidate's median must be to replace them: differences below
// it are within what repetitions on a shared machine scatter, and a tuned file must not lose to the
// defaults by chance.
inline constexpr double kMinLead = 1.05;
inline constexpr double kMinWinShare = 0.75;

// For --verify --against: the tuned rules (candidate 1) against a reference (candidate 2, the winners of a
// separate, exhaustive sweep) and the built-in rules (candidate 0), on fresh runs of every size. The tuned
// rules pass where at every size their median time is within kLargeBandTolerance of the reference's from
// kLargeBandBytes up and within kSmallBandTolerance below, and never beyond the built-in's by more than
// kMinLead (the noise the sweep itself allows). Candidate 3, the built-in rules again, measures the noise:
// how far apart two runs of one setting land in this run.
inline constexpr size_t kLargeBandBytes = size_t{16} << 20;
inline constexpr double kLargeBandTolerance = 1.05;
inline constexpr double kSmallBandTolerance = 1.15;
struct AcceptanceVerdict {
  Slowdown worst_large;    // tuned / reference, from kLargeBandBytes up
  Slowdown worst_small;    // tuned / reference, below
  Slowdown worst_builtin;  // tuned / built-in, every size
  Slowdown noise;          // the built-in rules against their twin, the slower over the faster, every size
  bool passed() const {
    return worst_large.ratio <= kLargeBandTolerance && worst_small.ratio <= kSmallBandTolerance &&
           worst_builtin.ratio <= kMinLead;
  }
};
AcceptanceVerdict judgeAgainstReference(const std::vector<OpSweep>& sweeps);
// Per collective, a row per size: the median busbw of the built-in, tuned and reference rules, the tuned
// rules' time over the reference's and the built-in's, each marked '!' where it fails its bound, and the
// noise (the built-in rules' twin against them, the slower over the faster).
std::string acceptanceTable(int nranks, const std::vector<OpSweep>& sweeps);

// The tuning file: a comment saying how it was measured (`provenance`, one line per entry), the signature
// line, and per collective one rule per band of sizes: the winner at each measured size serves from it up to
// the next (the last with no bound; below the first the built-in rules go on deciding), adjacent bands with
// the same winner merged, none where the built-in rules won. Then the engine's rules, by plan chunk size
// alike (`engine` in increasing chunk size). Rules are for `nranks` ranks.
std::string tuningFileText(const std::vector<std::string>& provenance, const std::string& signature, int nranks,
                           const std::vector<TuneCandidate>& candidates, const std::vector<OpSweep>& sweeps,
                           const std::vector<EngineSweep>& engine);

// Per collective, a table of median busbw (GB/s): a row per candidate, a column per size, '*' beside each
// size's winner, and a last row with the winner's lead over the built-in rules.
std::string sweepTable(int nranks, const std::vector<TuneCandidate>& candidates, const std::vector<OpSweep>& sweeps);
// The engine's: per plan chunk size, a row per candidate with its median ms per step, '*' beside the winner,
// and the winner's lead over the built-in.
std::string engineTable(int nranks, const std::vector<EngineSweep>& engine);

// Everything measured, for plots (perf/tune_heatmap.py): candidates, per collective the sizes, every
// repetition's seconds and the winners, and per engine chunk size the candidates, seconds and winner.
std::string sweepJson(const std::string& signature, int nranks, const std::vector<TuneCandidate>& candidates,
                      const std::vector<OpSweep>& sweeps, const std::vector<EngineSweep>& engine);

}  // namespace psdp::perf
