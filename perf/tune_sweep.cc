#include "tune_sweep.h"

#include <algorithm>
#include <cstdio>

namespace psdp::perf {
namespace {

constexpr size_t KiB = size_t{1} << 10;
constexpr size_t MiB = size_t{1} << 20;

std::string format(const char* fmt, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), fmt, value);
  return text;
}

double busbw(const OpSweep& sweep, size_t candidate, size_t size, int nranks) {
  const double seconds = sweep.median(candidate, size);
  return seconds > 0 ? static_cast<double>(sweep.sizes[size]) / seconds / 1e9 * tuneBusFactor(sweep.op, nranks) : 0;
}

}  // namespace

std::string sizeText(size_t bytes) {
  char text[32];
  if (bytes >= MiB && bytes % MiB == 0) {
    std::snprintf(text, sizeof(text), "%zuM", bytes / MiB);
  } else if (bytes >= KiB && bytes % KiB == 0) {
    std::snprintf(text, sizeof(text), "%zuK", bytes / KiB);
  } else {
    std::snprintf(text, sizeof(text), "%zu", bytes);
  }
  return text;
}

std::vector<TuneCandidate> tuneCandidates(bool quick) {
  std::vector<TuneCandidate> candidates = {{"built-in", "", "", ""}, {"rhd", "*:0-=rhd", "algorithm=rhd", ""}};
  auto direct = [&](bool cma, bool stream) {
    const std::string flags = std::string("cma=") + (cma ? "1" : "0") + ",stream=" + (stream ? "1" : "0");
    std::string fields = flags;
    std::replace(fields.begin(), fields.end(), ',', ' ');
    candidates.push_back({std::string("direct") + (cma ? " cma" : "") + (stream ? " stream" : ""),
                          "*:0-=direct,fallback=ring," + flags, "algorithm=direct fallback=ring " + fields, ""});
  };
  auto ring = [&](size_t fragment, int depth) {
    const std::string f = sizeText(fragment), d = std::to_string(depth);
    candidates.push_back({"ring " + f + " x" + d, "*:0-=ring,fragment=" + f + ",depth=" + d,
                          "algorithm=ring fragment=" + f + " depth=" + d, ""});
  };
  if (quick) {
    direct(true, false);
    direct(true, true);
    for (size_t fragment : {256 * KiB, 1 * MiB}) ring(fragment, 4);
    return candidates;
  }
  for (bool cma : {false, true}) {
    for (bool stream : {false, true}) direct(cma, stream);
  }
  for (size_t fragment : {64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB}) {
    for (int depth : {2, 4, 8}) ring(fragment, depth);
  }
  return candidates;
}

std::vector<TuneCandidate> verifyCandidates(const std::string& tuning_file, const std::string& reference) {
  std::vector<TuneCandidate> candidates = {{"built-in", "", "", ""}, {"tuned", "", "", tuning_file}};
  if (!reference.empty()) {
    candidates.push_back({"reference", "", "", reference});
    candidates.push_back({"built-in twin", "", "", ""});
  }
  return candidates;
}

namespace {

// At one size of a --verify --against sweep: the tuned rules' time over the reference's and the built-in's,
// the bound the first is held to there, and the noise (the built-in rules against their twin, candidates 0
// and 3: the slower over the faster).
struct SizeRatios {
  double to_reference, to_builtin, bound, noise;
};
SizeRatios ratiosAt(const OpSweep& sweep, size_t size) {
  const double builtin = sweep.median(0, size), twin = sweep.median(3, size);
  return {sweep.median(1, size) / sweep.median(2, size), sweep.median(1, size) / builtin,
          sweep.sizes[size] >= kLargeBandBytes ? kLargeBandTolerance : kSmallBandTolerance,
          std::max(builtin, twin) / std::min(builtin, twin)};
}

}  // namespace

AcceptanceVerdict judgeAgainstReference(const std::vector<OpSweep>& sweeps) {
  AcceptanceVerdict verdict;
  for (const OpSweep& sweep : sweeps) {
    for (size_t s = 0; s < sweep.sizes.size(); ++s) {
      const SizeRatios r = ratiosAt(sweep, s);
      auto keepWorst = [&](Slowdown& worst, double ratio) {
        if (ratio > worst.ratio) worst = {ratio, tuneOpName(sweep.op), sweep.sizes[s]};
      };
      keepWorst(sweep.sizes[s] >= kLargeBandBytes ? verdict.worst_large : verdict.worst_small, r.to_reference);
      keepWorst(verdict.worst_builtin, r.to_builtin);
      keepWorst(verdict.noise, r.noise);
    }
  }
  return verdict;
}

std::string acceptanceTable(int nranks, const std::vector<OpSweep>& sweeps) {
  std::string text;
  char line[160];
  for (const OpSweep& sweep : sweeps) {
    std::snprintf(line, sizeof(line), "# %s, %d ranks: median busbw (GB/s); time ratios, ! beyond the bound\n",
                  tuneOpName(sweep.op), nranks);
    text += line;
    std::snprintf(line, sizeof(line), "# %8s %9s %9s %9s %16s %16s %8s\n", "size", "built-in", "tuned", "reference",
                  "tuned/reference", "tuned/built-in", "noise");
    text += line;
    for (size_t s = 0; s < sweep.sizes.size(); ++s) {
      const SizeRatios r = ratiosAt(sweep, s);
      std::snprintf(line, sizeof(line), "  %8s %9.2f %9.2f %9.2f %15.3f%c %15.3f%c %8.3f\n",
                    sizeText(sweep.sizes[s]).c_str(), busbw(sweep, 0, s, nranks), busbw(sweep, 1, s, nranks),
                    busbw(sweep, 2, s, nranks), r.to_reference, r.to_reference > r.bound ? '!' : ' ', r.to_builtin,
                    r.to_builtin > kMinLead ? '!' : ' ', r.noise);
      text += line;
    }
    text += "\n";
  }
  return text;
}

Slowdown worstSlowdown(const std::vector<OpSweep>& sweeps, const std::vector<EngineSweep>& engine) {
  Slowdown worst;
  for (const OpSweep& sweep : sweeps) {
    for (size_t s = 0; s < sweep.sizes.size(); ++s) {
      const double ratio = sweep.median(1, s) / sweep.median(0, s);
      if (ratio > worst.ratio) worst = {ratio, tuneOpName(sweep.op), sweep.sizes[s]};
    }
  }
  for (const EngineSweep& sweep : engine) {
    const double ratio = sweep.median(1) / sweep.median(0);
    if (ratio > worst.ratio) worst = {ratio, "engine", sweep.chunk_bytes};
  }
  return worst;
}

std::string EngineCandidate::name() const {
  if (window == 0 && grouping == 0) return "tuned";
  return "window " + std::to_string(window) + " x" + std::to_string(grouping);
}

std::vector<size_t> engineChunkSizes(bool quick) {
  if (quick) return {4 * MiB, 64 * MiB};
  return {1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB};
}

std::vector<EngineCandidate> engineCandidates(bool quick, size_t chunk_bytes) {
  constexpr size_t kMaxTransferBytes = 64 * MiB;
  std::vector<EngineCandidate> candidates = {kBuiltInEngine};
  const std::vector<size_t> windows = quick ? std::vector<size_t>{1, 2, 4} : std::vector<size_t>{1, 2, 4, 8};
  const std::vector<size_t> groupings = quick ? std::vector<size_t>{1, 4} : std::vector<size_t>{1, 2, 4, 8, 16};
  for (size_t grouping : groupings) {
    if (grouping > 1 && chunk_bytes * grouping > kMaxTransferBytes) continue;
    for (size_t window : windows) {
      const EngineCandidate candidate{window, grouping};
      if (!(candidate == kBuiltInEngine)) candidates.push_back(candidate);
    }
  }
  return candidates;
}

size_t EngineSweep::winner() const {
  std::vector<const std::vector<double>*> samples;
  for (const std::vector<double>& s : seconds) samples.push_back(&s);
  return winnerOf(samples);
}

std::vector<size_t> tuneSizes(size_t min, size_t max, size_t factor) {
  std::vector<size_t> sizes;
  for (size_t s = min; s <= max && s > 0; s *= std::max<size_t>(factor, 2)) sizes.push_back(s);
  return sizes;
}

const char* tuneOpName(TuneOp op) {
  switch (op) {
    case TuneOp::kAllReduce: return "all-reduce";
    case TuneOp::kReduceScatter: return "reduce-scatter";
    case TuneOp::kAllGather: return "all-gather";
  }
  return "?";
}

const char* tuneOpShortName(TuneOp op) {
  switch (op) {
    case TuneOp::kAllReduce: return "ar";
    case TuneOp::kReduceScatter: return "rs";
    case TuneOp::kAllGather: return "ag";
  }
  return "?";
}

double tuneBusFactor(TuneOp op, int nranks) {
  const double n = nranks;
  return op == TuneOp::kAllReduce ? 2 * (n - 1) / n : (n - 1) / n;
}

double medianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

double OpSweep::median(size_t candidate, size_t size) const {
  return medianOf(seconds[candidate][size]);
}

size_t winnerOf(const std::vector<const std::vector<double>*>& seconds) {
  if (seconds.empty() || seconds[0]->empty()) return 0;
  auto median = [&](size_t c) { return medianOf(*seconds[c]); };
  size_t best = 0;
  for (size_t c = 1; c < seconds.size(); ++c) {
    if (!seconds[c]->empty() && median(c) < median(best)) best = c;
  }
  if (best == 0 || median(best) * kMinLead > median(0)) return 0;
  const std::vector<double>& mine = *seconds[best];
  const std::vector<double>& builtin = *seconds[0];
  size_t faster = 0;
  for (size_t r = 0; r < std::min(mine.size(), builtin.size()); ++r) faster += mine[r] < builtin[r] ? 1 : 0;
  return static_cast<double>(faster) >= kMinWinShare * static_cast<double>(builtin.size()) ? best : 0;
}

size_t OpSweep::winner(size_t size) const {
  std::vector<const std::vector<double>*> samples;
  for (const std::vector<std::vector<double>>& candidate : seconds) samples.push_back(&candidate[size]);
  return winnerOf(samples);
}

std::string tuningFileText(const std::vector<std::string>& provenance, const std::string& signature, int nranks,
                           const std::vector<TuneCandidate>& candidates, const std::vector<OpSweep>& sweeps,
                           const std::vector<EngineSweep>& engine) {
  std::string text = "psdp-tuning 1\n";
  for (const std::string& line : provenance) text += "# " + line + "\n";
  text += "signature " + signature + "\n";
  for (const OpSweep& sweep : sweeps) {
    size_t s = 0;
    while (s < sweep.sizes.size()) {
      const size_t won = sweep.winner(s);
      size_t end = s + 1;
      while (end < sweep.sizes.size() && sweep.winner(end) == won) ++end;
      if (won != 0) {
        const std::string from = sizeText(sweep.sizes[s]);
        const std::string below = end == sweep.sizes.size() ? "inf" : sizeText(sweep.sizes[end]);
        text += std::string(tuneOpName(sweep.op)) + " ranks=" + std::to_string(nranks) + " bytes=" + from + "-" +
                below + " " + candidates[won].fields + "\n";
      }
      s = end;
    }
  }
  auto setting = [&](size_t i) { return engine[i].candidates[engine[i].winner()]; };
  for (size_t i = 0; i < engine.size();) {
    const EngineCandidate won = setting(i);
    size_t end = i + 1;
    while (end < engine.size() && setting(end) == won) ++end;
    if (!(won == kBuiltInEngine)) {
      const std::string below = end == engine.size() ? "inf" : sizeText(engine[end].chunk_bytes);
      text += "engine ranks=" + std::to_string(nranks) + " chunk-bytes=" + sizeText(engine[i].chunk_bytes) + "-" +
              below + " window=" + std::to_string(won.window) + " grouping=" + std::to_string(won.grouping) + "\n";
    }
    i = end;
  }
  return text;
}

std::string sweepTable(int nranks, const std::vector<TuneCandidate>& candidates, const std::vector<OpSweep>& sweeps) {
  std::string text;
  for (const OpSweep& sweep : sweeps) {
    text += std::string("# ") + tuneOpName(sweep.op) + ", " + std::to_string(nranks) +
            " ranks: median busbw (GB/s) per size of the whole buffer; * the winner\n";
    char cell[64];
    std::snprintf(cell, sizeof(cell), "%-22s", "# candidate");
    text += cell;
    for (size_t size : sweep.sizes) {
      std::snprintf(cell, sizeof(cell), "%9s", sizeText(size).c_str());
      text += cell;
    }
    text += "\n";
    for (size_t c = 0; c < candidates.size(); ++c) {
      std::snprintf(cell, sizeof(cell), "%-22s", candidates[c].name.c_str());
      text += cell;
      for (size_t s = 0; s < sweep.sizes.size(); ++s) {
        std::snprintf(cell, sizeof(cell), "%8.2f%c", busbw(sweep, c, s, nranks), sweep.winner(s) == c ? '*' : ' ');
        text += cell;
      }
      text += "\n";
    }
    std::snprintf(cell, sizeof(cell), "%-22s", "winner / built-in");
    text += cell;
    for (size_t s = 0; s < sweep.sizes.size(); ++s) {
      const double lead =
          sweep.median(sweep.winner(s), s) > 0 ? sweep.median(0, s) / sweep.median(sweep.winner(s), s) : 0;
      std::snprintf(cell, sizeof(cell), "%8.2fx", lead);
      text += cell;
    }
    text += "\n\n";
  }
  return text;
}

std::string engineTable(int nranks, const std::vector<EngineSweep>& engine) {
  std::string text;
  char cell[96];
  for (const EngineSweep& sweep : engine) {
    std::snprintf(cell, sizeof(cell), "# engine, %d ranks, plan chunks of %s (%zu): median ms per step; * the winner\n",
                  nranks, sizeText(sweep.chunk_bytes).c_str(), sweep.chunks);
    text += cell;
    const size_t won = sweep.winner();
    for (size_t c = 0; c < sweep.candidates.size(); ++c) {
      std::snprintf(cell, sizeof(cell), "%-22s%9.1f%c\n",
                    (sweep.candidates[c].name() + (c == 0 ? " (built-in)" : "")).c_str(), sweep.median(c) * 1e3,
                    c == won ? '*' : ' ');
      text += cell;
    }
    std::snprintf(cell, sizeof(cell), "%-22s%9.2fx\n\n", "winner / built-in", sweep.median(0) / sweep.median(won));
    text += cell;
  }
  return text;
}

std::string sweepJson(const std::string& signature, int nranks, const std::vector<TuneCandidate>& candidates,
                      const std::vector<OpSweep>& sweeps, const std::vector<EngineSweep>& engine) {
  auto seconds = [](const std::vector<double>& values) {
    std::string text = "[";
    for (size_t r = 0; r < values.size(); ++r) text += (r ? ", " : "") + format("%.9g", values[r]);
    return text + "]";
  };
  std::string json =
      "{\n  \"signature\": \"" + signature + "\",\n  \"nranks\": " + std::to_string(nranks) + ",\n  \"candidates\": [";
  for (size_t c = 0; c < candidates.size(); ++c) {
    json += std::string(c ? ", " : "") + "{\"name\": \"" + candidates[c].name + "\", \"rule\": \"" +
            candidates[c].rule + "\"}";
  }
  json += "],\n  \"collectives\": [";
  for (size_t o = 0; o < sweeps.size(); ++o) {
    const OpSweep& sweep = sweeps[o];
    json += std::string(o ? "," : "") + "\n    {\"collective\": \"" + tuneOpName(sweep.op) + "\", \"sizes\": [";
    for (size_t s = 0; s < sweep.sizes.size(); ++s) json += (s ? ", " : "") + std::to_string(sweep.sizes[s]);
    json += "], \"winners\": [";
    for (size_t s = 0; s < sweep.sizes.size(); ++s) json += (s ? ", " : "") + std::to_string(sweep.winner(s));
    json += "],\n     \"seconds\": [";
    for (size_t c = 0; c < sweep.seconds.size(); ++c) {
      json += c ? ",\n                 [" : "[";
      for (size_t s = 0; s < sweep.seconds[c].size(); ++s) json += (s ? ", " : "") + seconds(sweep.seconds[c][s]);
      json += "]";
    }
    json += "]}";
  }
  json += "\n  ],\n  \"engine\": [";
  for (size_t i = 0; i < engine.size(); ++i) {
    const EngineSweep& sweep = engine[i];
    json += std::string(i ? "," : "") + "\n    {\"chunk_bytes\": " + std::to_string(sweep.chunk_bytes) +
            ", \"chunks\": " + std::to_string(sweep.chunks) + ", \"winner\": " + std::to_string(sweep.winner()) +
            ",\n     \"candidates\": [";
    for (size_t c = 0; c < sweep.candidates.size(); ++c) {
      json += std::string(c ? ", " : "") + "{\"window\": " + std::to_string(sweep.candidates[c].window) +
              ", \"grouping\": " + std::to_string(sweep.candidates[c].grouping) + "}";
    }
    json += "],\n     \"seconds\": [";
    for (size_t c = 0; c < sweep.seconds.size(); ++c) json += (c ? ", " : "") + seconds(sweep.seconds[c]);
    json += "]}";
  }
  json += "\n  ]\n}\n";
  return json;
}

}  // namespace psdp::perf
