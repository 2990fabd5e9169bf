#include "coll/algorithm_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "base/config.h"

namespace psdp::coll {
namespace {

constexpr size_t KiB = size_t{1} << 10;
constexpr size_t MiB = size_t{1} << 20;

// All-reduce, reduce-scatter and all-gather below this (the whole buffer) use recursive halving/doubling:
// log2(n) steps beat the ring's 2(n-1) where latency dominates (psdp-perf, README "Collectives").
constexpr size_t kRecursiveBelow = 256 * KiB;
// From here direct reductions may read private buffers with CMA where the ring's messages are copied once
// (InterconnectTraits): with one system call per tile and peer, and an all-reduce's second round, that ring
// is as fast or faster below it (2 ranks, private buffers: all-reduce 4.5 against 7.6 GB/s at 4 MiB, even
// at 8 MiB, 10-30% ahead from 16 MiB). A ring whose messages pass through shared memory in pieces is slower
// from kRecursiveBelow on (2 ranks, caller progress: reduce-scatter 3.5 against 6.8 GB/s at 1 MiB,
// all-reduce 2.6 against 3.9 at 2 MiB). Copies (all-gather, broadcast) gain from 1 MiB on, so they read with
// CMA wherever they run direct.
constexpr size_t kCmaReductionsFrom = 8 * MiB;
// From here direct operations store their results past the cache (coll/direct_kernels.h: at 4 MiB plain
// stores are up to 30% faster, at 16 MiB streaming stores 40-60% faster out of place, 32 MiB of L3).
constexpr size_t kStreamingFrom = 8 * MiB;
// A caller whose buffers are private (and who cannot be read) pays one small-message round per operation
// for nothing: after each fallback the next 1, 2, 4, ... up to this many operations skip the offers. Long
// enough that the offers cost under 2% of such a caller's operations, short enough that buffers that
// become reachable (psdp_mem_alloc after a warm-up) are noticed within a step of a framework's buckets.
constexpr int kBuiltInDirectBackoff = 64;

AlgorithmRule rule(OpKind kind, size_t min_bytes, size_t max_bytes, Algorithm algorithm) {
  AlgorithmRule r;
  r.kind = kind;
  r.min_bytes = min_bytes;
  r.max_bytes = max_bytes;
  r.algorithm = algorithm;
  return r;
}

AlgorithmRule direct(OpKind kind, size_t min_bytes, size_t max_bytes, bool cma, bool streaming) {
  AlgorithmRule r = rule(kind, min_bytes, max_bytes, Algorithm::kDirect);
  r.cma = cma;
  r.streaming = streaming;
  r.backoff = kBuiltInDirectBackoff;
  return r;
}

std::vector<AlgorithmRule> builtInRules(InterconnectTraits traits) {
  std::vector<AlgorithmRule> rules;
  for (OpKind kind : {OpKind::kAllReduce, OpKind::kReduceScatter}) {
    rules.push_back(rule(kind, 0, kRecursiveBelow, Algorithm::kRecursive));
    rules.push_back(
        direct(kind, kRecursiveBelow, kCmaReductionsFrom, /*cma=*/!traits.ring_single_copy, /*streaming=*/false));
    rules.push_back(direct(kind, kCmaReductionsFrom, SIZE_MAX, /*cma=*/true, /*streaming=*/true));
  }
  // The broadcast has no recursive form: its ring is the chain (coll/chain_broadcast.h).
  for (OpKind kind : {OpKind::kAllGather, OpKind::kBroadcast}) {
    rules.push_back(
        rule(kind, 0, kRecursiveBelow, kind == OpKind::kAllGather ? Algorithm::kRecursive : Algorithm::kRing));
    rules.push_back(direct(kind, kRecursiveBelow, kStreamingFrom, /*cma=*/true, /*streaming=*/false));
    rules.push_back(direct(kind, kStreamingFrom, SIZE_MAX, /*cma=*/true, /*streaming=*/true));
  }
  return rules;
}

// What PSDP_ALGORITHM=<forced> means as rules: the one algorithm everywhere. Forced direct reads with CMA at
// every size and falls back to what auto would have run.
std::vector<AlgorithmRule> forcedRules(psdp_algorithm_t forced) {
  std::vector<AlgorithmRule> rules;
  auto everywhere = [](Algorithm algorithm, size_t min_bytes, size_t max_bytes) {
    AlgorithmRule r;
    r.any_kind = true;
    r.min_bytes = min_bytes;
    r.max_bytes = max_bytes;
    r.algorithm = algorithm;
    r.origin = "PSDP_ALGORITHM";
    return r;
  };
  switch (forced) {
    case PSDP_ALGORITHM_RING: rules.push_back(everywhere(Algorithm::kRing, 0, SIZE_MAX)); break;
    case PSDP_ALGORITHM_RHD: rules.push_back(everywhere(Algorithm::kRecursive, 0, SIZE_MAX)); break;
    case PSDP_ALGORITHM_DIRECT: {
      AlgorithmRule small = everywhere(Algorithm::kDirect, 0, kRecursiveBelow);
      small.fallback = Algorithm::kRecursive;
      AlgorithmRule middle = everywhere(Algorithm::kDirect, kRecursiveBelow, kStreamingFrom);
      AlgorithmRule large = everywhere(Algorithm::kDirect, kStreamingFrom, SIZE_MAX);
      large.streaming = true;
      for (AlgorithmRule* r : {&small, &middle, &large}) {
        r->cma = true;
        rules.push_back(*r);
      }
      break;
    }
    default: break;
  }
  return rules;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

Result<size_t> parseBound(std::string_view text, size_t unbounded) {
  text = trim(text);
  if (text.empty() || text == "inf") return unbounded;
  return parseBytes(text);
}

Result<int> parseCount(std::string_view text) {
  text = trim(text);
  if (text.empty() || text == "inf") return INT32_MAX;
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    return Status::invalidArgument("'{}' is not a count", text);
  }
  return value;
}

Result<bool> parseFlag(std::string_view text) {
  text = trim(text);
  if (text == "1") return true;
  if (text == "0") return false;
  return Status::invalidArgument("'{}' is not 0 or 1", text);
}

// "<min>-<max>", either side may be empty (0 / no bound).
template <typename T, typename Parse>
Status parseRange(std::string_view text, T unbounded, Parse parse, T& min, T& max, const char* what) {
  size_t dash = text.find('-');
  if (dash == std::string_view::npos) return Status::invalidArgument("{} '{}' is not <min>-<max>", what, text);
  std::string_view lo = trim(text.substr(0, dash));
  PSDP_ASSIGN_OR_RETURN(min, lo.empty() ? Result<T>(T{0}) : parse(lo));
  PSDP_ASSIGN_OR_RETURN(max, parse(text.substr(dash + 1)));
  if (max != unbounded && max <= min) return Status::invalidArgument("{} '{}' is empty", what, text);
  return Status::ok();
}

Status parseOption(std::string_view option, AlgorithmRule& rule) {
  size_t eq = option.find('=');
  if (eq == std::string_view::npos) return Status::invalidArgument("option '{}' is not <name>=<value>", option);
  std::string_view name = trim(option.substr(0, eq)), value = option.substr(eq + 1);
  if (name == "ranks") {
    return parseRange<int>(value, INT32_MAX, parseCount, rule.min_ranks, rule.max_ranks, "rank range");
  }
  if (name == "fallback") {
    PSDP_ASSIGN_OR_RETURN(rule.fallback, parseAlgorithmName(value));
    return AlgorithmTable::checkRule(rule);
  }
  if (name == "cma") {
    PSDP_ASSIGN_OR_RETURN(rule.cma, parseFlag(value));
    return Status::ok();
  }
  if (name == "stream") {
    PSDP_ASSIGN_OR_RETURN(rule.streaming, parseFlag(value));
    return Status::ok();
  }
  if (name == "backoff") {
    PSDP_ASSIGN_OR_RETURN(rule.backoff, parseCount(value));
    return AlgorithmTable::checkRule(rule);
  }
  if (name == "fragment") {
    PSDP_ASSIGN_OR_RETURN(rule.fragment_bytes, parseBytes(trim(value)));
    return AlgorithmTable::checkRule(rule);
  }
  if (name == "depth") {
    PSDP_ASSIGN_OR_RETURN(rule.depth, parseCount(value));
    return AlgorithmTable::checkRule(rule);
  }
  return Status::invalidArgument("unknown option '{}' (ranks, fallback, cma, stream, backoff, fragment or depth)",
                                 name);
}

Result<AlgorithmRule> parseRule(std::string_view text) {
  AlgorithmRule rule;
  rule.origin = "PSDP_ALGORITHMS";
  size_t colon = text.find(':'), eq = text.find('=');
  if (colon == std::string_view::npos || eq == std::string_view::npos || eq < colon) {
    return Status::invalidArgument("not <collective>:<min>-<max>=<algorithm>[,<option>=<value>...]");
  }
  PSDP_RETURN_IF_ERROR(parseCollectiveName(text.substr(0, colon), rule));
  PSDP_RETURN_IF_ERROR(parseRange<size_t>(
      text.substr(colon + 1, eq - colon - 1), SIZE_MAX, [](std::string_view t) { return parseBound(t, SIZE_MAX); },
      rule.min_bytes, rule.max_bytes, "size range"));
  std::string_view rest = text.substr(eq + 1);
  size_t comma = rest.find(',');
  PSDP_ASSIGN_OR_RETURN(rule.algorithm, parseAlgorithmName(rest.substr(0, comma)));
  while (comma != std::string_view::npos) {
    rest.remove_prefix(comma + 1);
    comma = rest.find(',');
    PSDP_RETURN_IF_ERROR(parseOption(rest.substr(0, comma), rule));
  }
  return rule;
}

std::string formatBytes(size_t bytes) {
  if (bytes == SIZE_MAX) return "";
  for (auto [unit, suffix] : {std::pair{size_t{1} << 30, "G"}, {MiB, "M"}, {KiB, "K"}}) {
    if (bytes != 0 && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, suffix);
  }
  return fmt::format("{}", bytes);
}

}  // namespace

Result<Algorithm> parseAlgorithmName(std::string_view text) {
  text = trim(text);
  if (text == "ring") return Algorithm::kRing;
  if (text == "rhd") return Algorithm::kRecursive;
  if (text == "direct") return Algorithm::kDirect;
  return Status::invalidArgument("unknown algorithm '{}' (ring, rhd or direct)", text);
}

Status parseCollectiveName(std::string_view text, AlgorithmRule& rule) {
  text = trim(text);
  if (text == "*") {
    rule.any_kind = true;
    return Status::ok();
  }
  for (OpKind kind : {OpKind::kAllReduce, OpKind::kReduceScatter, OpKind::kAllGather, OpKind::kBroadcast}) {
    if (text == opKindName(kind)) {
      rule.kind = kind;
      return Status::ok();
    }
  }
  return Status::invalidArgument("unknown collective '{}' (all-reduce, reduce-scatter, all-gather, broadcast or *)",
                                 text);
}

const char* algorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kRing: return "ring";
    case Algorithm::kRecursive: return "rhd";
    case Algorithm::kDirect: return "direct";
  }
  return "?";
}

AlgorithmTable::AlgorithmTable(InterconnectTraits traits) : rules_(builtInRules(traits)) {}

std::string AlgorithmRule::originText() const {
  return line > 0 ? fmt::format("{} line {}", origin, line) : std::string(origin);
}

Status AlgorithmTable::checkRule(const AlgorithmRule& rule) {
  if (rule.max_bytes != SIZE_MAX && rule.max_bytes <= rule.min_bytes) {
    return Status::invalidArgument("size range {}-{} is empty", rule.min_bytes, rule.max_bytes);
  }
  if (rule.min_ranks < 1 || rule.max_ranks < rule.min_ranks) {
    return Status::invalidArgument("rank range {}-{} is empty", rule.min_ranks, rule.max_ranks);
  }
  if (rule.fallback == Algorithm::kDirect) return Status::invalidArgument("fallback must be ring or rhd");
  if (rule.backoff < 0 || rule.backoff > kMaxDirectBackoff) {
    return Status::invalidArgument("backoff {} is not between 0 and {}", rule.backoff, kMaxDirectBackoff);
  }
  if (rule.fragment_bytes != 0 && (rule.fragment_bytes < 64 || rule.fragment_bytes > (size_t{1} << 30))) {
    return Status::invalidArgument("fragment of {} bytes is not between 64 and 1G", rule.fragment_bytes);
  }
  if (rule.depth < 0 || rule.depth > kMaxDepth) {
    return Status::invalidArgument("depth {} is not between 0 (the default) and {}", rule.depth, kMaxDepth);
  }
  return Status::ok();
}

Result<AlgorithmTable> AlgorithmTable::make(psdp_algorithm_t forced, std::string_view user_rules,
                                            std::span<const AlgorithmRule> tuned, InterconnectTraits traits) {
  PSDP_ASSIGN_OR_RETURN(std::vector<AlgorithmRule> rules, parse(user_rules));
  for (AlgorithmRule& r : forcedRules(forced)) rules.push_back(r);
  for (const AlgorithmRule& r : tuned) {
    Status status = checkRule(r);
    if (!status.isOk()) return status.withContext(fmt::format("{} ('{}')", r.originText(), formatRule(r)));
    rules.push_back(r);
  }
  for (AlgorithmRule& r : builtInRules(traits)) rules.push_back(r);
  return AlgorithmTable(std::move(rules));
}

AlgorithmTable AlgorithmTable::ringOnly(const char* origin) {
  AlgorithmRule ring;
  ring.any_kind = true;
  ring.algorithm = Algorithm::kRing;
  ring.origin = origin;
  return AlgorithmTable(std::vector<AlgorithmRule>{ring});
}

Result<std::vector<AlgorithmRule>> AlgorithmTable::parse(std::string_view text) {
  std::vector<AlgorithmRule> rules;
  int number = 0;
  while (!trim(text).empty()) {
    size_t semicolon = text.find(';');
    std::string_view one = trim(text.substr(0, semicolon));
    text = semicolon == std::string_view::npos ? std::string_view() : text.substr(semicolon + 1);
    ++number;
    if (one.empty()) continue;
    Result<AlgorithmRule> rule = parseRule(one);
    if (!rule.isOk()) return rule.status().withContext(fmt::format("rule {} ('{}')", number, one));
    rules.push_back(rule.value());
  }
  return rules;
}

const AlgorithmRule& AlgorithmTable::find(OpKind kind, int nranks, size_t bytes) const {
  for (const AlgorithmRule& rule : rules_) {
    if (rule.matches(kind, nranks, bytes)) return rule;
  }
  // Only a call without data (the barrier) matches nothing; it has no algorithm to choose.
  static const AlgorithmRule kNone;
  return kNone;
}

size_t AlgorithmTable::maxFragmentBytes(size_t fragment_bytes) const {
  size_t most = fragment_bytes;
  for (const AlgorithmRule& rule : rules_) most = std::max(most, rule.fragment_bytes);
  return most;
}

int AlgorithmTable::maxDepth() const {
  int most = kDefaultDepth;
  for (const AlgorithmRule& rule : rules_) most = std::max(most, rule.depth);
  return most;
}

std::string AlgorithmTable::formatRule(const AlgorithmRule& rule) {
  std::string text =
      fmt::format("{}:{}-{}={}", rule.any_kind ? "*" : opKindName(rule.kind), formatBytes(rule.min_bytes),
                  formatBytes(rule.max_bytes), algorithmName(rule.algorithm));
  if (rule.min_ranks != 1 || rule.max_ranks != INT32_MAX) {
    text += fmt::format(",ranks={}-{}", rule.min_ranks,
                        rule.max_ranks == INT32_MAX ? std::string() : fmt::format("{}", rule.max_ranks));
  }
  if (rule.algorithm == Algorithm::kDirect) {
    text += fmt::format(",fallback={},cma={},stream={}", algorithmName(rule.fallback), rule.cma ? 1 : 0,
                        rule.streaming ? 1 : 0);
    if (rule.backoff != 0) text += fmt::format(",backoff={}", rule.backoff);
  }
  if (rule.fragment_bytes != 0) text += ",fragment=" + formatBytes(rule.fragment_bytes);
  if (rule.depth != 0) text += fmt::format(",depth={}", rule.depth);
  return text;
}

std::string AlgorithmTable::format() const {
  std::string text;
  for (const AlgorithmRule& rule : rules_) text += fmt::format("{:<68} # {}\n", formatRule(rule), rule.originText());
  return text;
}

}  // namespace psdp::coll
