#include "tune/tuning_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <sstream>

#include "tune/line_fields.h"

namespace psdp::tune {
namespace {

constexpr std::array<std::string_view, 5> kCollectives = {"all-reduce", "reduce-scatter", "all-gather", "broadcast",
                                                          "*"};
constexpr std::array<std::string_view, 3> kAlgorithms = {"ring", "rhd", "direct"};
constexpr std::array<std::string_view, 2> kFallbacks = {"ring", "rhd"};
// Bounds of the counts a rule may give; the collectives and the engine check their own limits when the
// rules are applied.
constexpr long long kMaxCount = 1 << 16;

template <size_t N>
bool isOneOf(std::string_view word, const std::array<std::string_view, N>& words) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

// Calls `parse_field` for each field of a rule after its keyword: each must be key=value, and no key may
// come twice.
template <typename ParseField>
Status forEachField(const std::vector<Field>& fields, const LineRef& where, ParseField&& parse_field) {
  for (size_t i = 1; i < fields.size(); ++i) {
    const Field& f = fields[i];
    if (!f.has_value) return where.error(f.column, fmt::format("'{}' is not a key=value field", f.key));
    for (size_t j = 1; j < i; ++j) {
      if (fields[j].key == f.key) return where.error(f.column, fmt::format("{} given twice", f.key));
    }
    PSDP_RETURN_IF_ERROR(parse_field(f));
  }
  return Status::ok();
}

Status parseFlag(const Field& field, const LineRef& where, int& out) {
  PSDP_ASSIGN_OR_RETURN(long long value, parseWhole(field, where, 0, 1));
  out = static_cast<int>(value);
  return Status::ok();
}

Status parseCount(const Field& field, const LineRef& where, long long min, int& out) {
  PSDP_ASSIGN_OR_RETURN(long long value, parseWhole(field, where, min, kMaxCount));
  out = static_cast<int>(value);
  return Status::ok();
}

Status parseWord(const Field& field, const LineRef& where, std::string_view list, bool known, std::string& out) {
  if (!known)
    return where.error(field.value_column, fmt::format("{}: '{}' is not one of {}", field.key, field.value, list));
  out = std::string(field.value);
  return Status::ok();
}

Status parseFragment(const Field& field, const LineRef& where, size_t& out) {
  PSDP_ASSIGN_OR_RETURN(out, parseByteCount(field, where));
  if (out == 0) return where.error(field.value_column, "fragment: must be at least 1 byte");
  return Status::ok();
}

Result<CollectiveRule> parseCollectiveRule(const std::vector<Field>& fields, const LineRef& where, int line_end) {
  CollectiveRule rule;
  rule.collective = std::string(fields[0].key);
  rule.line = where.line;
  PSDP_RETURN_IF_ERROR(forEachField(fields, where, [&](const Field& f) -> Status {
    if (f.key == "ranks") return parseRankRange(f, where, rule.min_ranks, rule.max_ranks);
    if (f.key == "bytes") return parseByteRange(f, where, rule.min_bytes, rule.max_bytes);
    if (f.key == "algorithm") {
      return parseWord(f, where, "ring, rhd, direct", isOneOf(f.value, kAlgorithms), rule.algorithm);
    }
    if (f.key == "fallback") return parseWord(f, where, "ring, rhd", isOneOf(f.value, kFallbacks), rule.fallback);
    if (f.key == "cma") return parseFlag(f, where, rule.cma);
    if (f.key == "stream") return parseFlag(f, where, rule.stream);
    if (f.key == "backoff") return parseCount(f, where, 0, rule.backoff);
    if (f.key == "depth") return parseCount(f, where, 1, rule.depth);
    if (f.key == "fragment") return parseFragment(f, where, rule.fragment_bytes);
    return where.error(f.column, fmt::format("'{}' is not a field of a collective rule (ranks, bytes, algorithm, "
                                             "fallback, cma, stream, backoff, fragment, depth)",
                                             f.key));
  }));
  if (rule.algorithm.empty()) return where.error(line_end, "the rule lacks algorithm= (ring, rhd or direct)");
  return rule;
}

Result<EngineRule> parseEngineRule(const std::vector<Field>& fields, const LineRef& where, int line_end) {
  EngineRule rule;
  rule.line = where.line;
  PSDP_RETURN_IF_ERROR(forEachField(fields, where, [&](const Field& f) -> Status {
    if (f.key == "ranks") return parseRankRange(f, where, rule.min_ranks, rule.max_ranks);
    if (f.key == "chunk-bytes") return parseByteRange(f, where, rule.min_chunk_bytes, rule.max_chunk_bytes);
    if (f.key == "window") return parseCount(f, where, 1, rule.window);
    if (f.key == "grouping") return parseCount(f, where, 1, rule.grouping);
    if (f.key == "fragment") return parseFragment(f, where, rule.fragment_bytes);
    return where.error(f.column, fmt::format("'{}' is not a field of an engine rule (ranks, chunk-bytes, window, "
                                             "grouping, fragment)",
                                             f.key));
  }));
  if (rule.window == 0 && rule.grouping == 0 && rule.fragment_bytes == 0)
    return where.error(line_end, "the rule sets none of window=, grouping= and fragment=");
  return rule;
}

std::string rankText(int lo, int hi) {
  if (lo == 1 && hi == INT_MAX) return "*";
  if (lo == hi) return std::to_string(lo);
  return hi == INT_MAX ? fmt::format("{}-inf", lo) : fmt::format("{}-{}", lo, hi);
}

std::string byteText(size_t lo, size_t hi) {
  if (lo == 0 && hi == SIZE_MAX) return "*";
  return formatBytes(lo) + "-" + formatBytes(hi);
}

}  // namespace

const CollectiveRule* TuningSection::findCollective(std::string_view collective, int nranks, size_t bytes) const {
  for (const CollectiveRule& rule : collectives) {
    if (rule.matches(collective, nranks, bytes)) return &rule;
  }
  return nullptr;
}

const EngineRule* TuningSection::findEngine(int nranks, size_t chunk_bytes) const {
  for (const EngineRule& rule : engine) {
    if (rule.matches(nranks, chunk_bytes)) return &rule;
  }
  return nullptr;
}

Result<TuningFile> TuningFile::parse(std::string_view text, std::string_view name) {
  if (text.size() > kMaxFileBytes) {
    return Status::invalidArgument("{}: {} bytes, more than a tuning file may have ({})", name, text.size(),
                                   kMaxFileBytes);
  }
  TuningFile file;
  bool have_header = false;
  int line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    LineRef where{name, ++line_number};
    if (line.find('\0') != std::string_view::npos) {
      return where.error(static_cast<int>(line.find('\0')) + 1, "a NUL byte: not a text file");
    }
    PSDP_ASSIGN_OR_RETURN(std::vector<Field> fields, splitFields(line, where));
    if (fields.empty()) continue;
    const Field& head = fields[0];
    // Where an error about something missing points: just past the line's last field.
    const int line_end =
        fields.back().column +
        static_cast<int>(fields.back().key.size() + (fields.back().has_value ? fields.back().value.size() + 1 : 0));
    if (!have_header) {
      if (head.key != "psdp-tuning" || head.has_value) {
        return where.error(head.column, "a tuning file starts with 'psdp-tuning 1'");
      }
      if (fields.size() != 2 || fields[1].has_value) return where.error(line_end, "expected 'psdp-tuning 1'");
      Field version = fields[1];
      version.value = version.key;
      version.key = "version";
      version.value_column = version.column;
      PSDP_ASSIGN_OR_RETURN(long long v, parseWhole(version, where, 1, INT_MAX));
      if (v != kFormatVersion) {
        return where.error(version.column,
                           fmt::format("format version {} is not one this psdp reads ({})", v, kFormatVersion));
      }
      have_header = true;
      continue;
    }
    if (head.has_value) return where.error(head.column, fmt::format("'{}': a line starts with a keyword", head.key));
    if (head.key == "signature") {
      if (file.sections_.size() == kMaxSections) return where.error(head.column, "too many sections");
      std::vector<Field> rest(fields.begin() + 1, fields.end());
      PSDP_ASSIGN_OR_RETURN(InterconnectSignature signature, parseSignature(rest, where, line_end));
      file.sections_.push_back(TuningSection{std::move(signature), {}, {}, line_number});
      continue;
    }
    const bool engine = head.key == "engine";
    if (!engine && !isOneOf(head.key, kCollectives)) {
      return where.error(head.column, fmt::format("'{}' is not a statement (signature, engine, or a collective: "
                                                  "all-reduce, reduce-scatter, all-gather, broadcast, *)",
                                                  head.key));
    }
    if (file.sections_.empty()) return where.error(head.column, "a rule before the first signature line");
    TuningSection& section = file.sections_.back();
    if (section.collectives.size() + section.engine.size() == kMaxRulesPerSection) {
      return where.error(head.column, "too many rules in this section");
    }
    if (engine) {
      PSDP_ASSIGN_OR_RETURN(EngineRule rule, parseEngineRule(fields, where, line_end));
      section.engine.push_back(rule);
    } else {
      PSDP_ASSIGN_OR_RETURN(CollectiveRule rule, parseCollectiveRule(fields, where, line_end));
      section.collectives.push_back(std::move(rule));
    }
  }
  if (!have_header) return Status::invalidArgument("{}: empty: a tuning file starts with 'psdp-tuning 1'", name);
  return file;
}

Result<TuningFile> TuningFile::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::fromErrno(errno, fmt::format("opening tuning file {}", path));
  std::string text;
  text.resize(kMaxFileBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return Status::fromErrno(errno, fmt::format("reading tuning file {}", path));
  text.resize(static_cast<size_t>(in.gcount()));
  return parse(text, path);
}

const TuningSection* TuningFile::sectionFor(const InterconnectSignature& job, std::string* why) const {
  std::string reasons;
  for (const TuningSection& section : sections_) {
    std::string reason;
    if (section.signature.covers(job, &reason)) return &section;
    reasons += fmt::format("{}line {}: {}", reasons.empty() ? "" : "; ", section.line, reason);
  }
  if (why != nullptr) *why = sections_.empty() ? "the file has no section" : "no section covers this job: " + reasons;
  return nullptr;
}

std::string formatRule(const CollectiveRule& r) {
  std::string out = fmt::format("{} ranks={} bytes={} algorithm={}", r.collective, rankText(r.min_ranks, r.max_ranks),
                                byteText(r.min_bytes, r.max_bytes), r.algorithm);
  if (!r.fallback.empty()) out += " fallback=" + r.fallback;
  if (r.cma >= 0) out += fmt::format(" cma={}", r.cma);
  if (r.stream >= 0) out += fmt::format(" stream={}", r.stream);
  if (r.backoff >= 0) out += fmt::format(" backoff={}", r.backoff);
  if (r.fragment_bytes > 0) out += " fragment=" + formatBytes(r.fragment_bytes);
  if (r.depth > 0) out += fmt::format(" depth={}", r.depth);
  return out;
}

std::string formatRule(const EngineRule& r) {
  std::string out = fmt::format("engine ranks={} chunk-bytes={}", rankText(r.min_ranks, r.max_ranks),
                                byteText(r.min_chunk_bytes, r.max_chunk_bytes));
  if (r.window > 0) out += fmt::format(" window={}", r.window);
  if (r.grouping > 0) out += fmt::format(" grouping={}", r.grouping);
  if (r.fragment_bytes > 0) out += " fragment=" + formatBytes(r.fragment_bytes);
  return out;
}

std::string TuningFile::format() const {
  std::string out = fmt::format("psdp-tuning {}\n", kFormatVersion);
  for (const TuningSection& section : sections_) {
    out += "signature " + section.signature.format() + "\n";
    for (const CollectiveRule& r : section.collectives) out += formatRule(r) + "\n";
    for (const EngineRule& r : section.engine) out += formatRule(r) + "\n";
  }
  return out;
}

uint64_t TuningFile::hash() const {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : format()) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace psdp::tune
