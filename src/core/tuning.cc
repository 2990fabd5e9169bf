#include "core/tuning.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "coll/provider.h"

namespace psdp::core {
namespace {

bool fileExists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

Result<coll::AlgorithmRule> algorithmRuleOf(const tune::CollectiveRule& in) {
  coll::AlgorithmRule rule;
  PSDP_RETURN_IF_ERROR(coll::parseCollectiveName(in.collective, rule));
  rule.min_ranks = in.min_ranks;
  rule.max_ranks = in.max_ranks == INT_MAX ? INT32_MAX : in.max_ranks;
  rule.min_bytes = in.min_bytes;
  rule.max_bytes = in.max_bytes;
  PSDP_ASSIGN_OR_RETURN(rule.algorithm, coll::parseAlgorithmName(in.algorithm));
  if (!in.fallback.empty()) {
    PSDP_ASSIGN_OR_RETURN(rule.fallback, coll::parseAlgorithmName(in.fallback));
  }
  if (in.cma >= 0) rule.cma = in.cma != 0;
  if (in.stream >= 0) rule.streaming = in.stream != 0;
  if (in.backoff >= 0) rule.backoff = in.backoff;
  rule.fragment_bytes = in.fragment_bytes;
  rule.depth = in.depth;
  rule.origin = "tuning file";
  rule.line = in.line;
  PSDP_RETURN_IF_ERROR(coll::AlgorithmTable::checkRule(rule));
  return rule;
}

}  // namespace

std::string LoadedTuning::describe() const {
  return file ? fmt::format("{} ({})", path, found_by) : std::string("no tuning file");
}

std::vector<std::string> tuningSearchPath(const Environment& env) {
  std::vector<std::string> path;
  std::optional<std::string> config_home = env.get("XDG_CONFIG_HOME");
  std::optional<std::string> home = env.get("HOME");
  // The XDG rule: an unset or relative XDG_CONFIG_HOME means ~/.config.
  if (config_home && !config_home->empty() && config_home->front() == '/') {
    path.push_back(*config_home + "/psdp/tuning");
  } else if (home && !home->empty()) {
    path.push_back(*home + "/.config/psdp/tuning");
  }
  path.push_back("/etc/psdp/tuning");
  return path;
}

Result<std::vector<coll::AlgorithmRule>> algorithmRulesOf(const tune::TuningSection& section, const std::string& path) {
  std::vector<coll::AlgorithmRule> rules;
  rules.reserve(section.collectives.size());
  for (const tune::CollectiveRule& in : section.collectives) {
    Result<coll::AlgorithmRule> rule = algorithmRuleOf(in);
    if (!rule.isOk()) return rule.status().withContext(fmt::format("{}:{}", path, in.line));
    rules.push_back(rule.value());
  }
  return rules;
}

Result<LoadedTuning> loadTuning(const Config& config, const Environment& env) {
  LoadedTuning loaded;
  if (config.tuning_file == "none") return loaded;
  if (!config.tuning_file.empty()) {
    loaded.path = config.tuning_file;
    loaded.found_by = "PSDP_TUNING_FILE";
  } else {
    for (const std::string& candidate : tuningSearchPath(env)) {
      if (!fileExists(candidate)) continue;
      loaded.path = candidate;
      loaded.found_by = "the search path";
      break;
    }
    if (loaded.path.empty()) return loaded;
  }
  Result<tune::TuningFile> file = tune::TuningFile::load(loaded.path);
  if (!file.isOk()) {
    return file.status().withContext(config.tuning_file.empty() ? "PSDP_TUNING_FILE unset, found on the search path"
                                                                : "PSDP_TUNING_FILE");
  }
  for (const tune::TuningSection& section : file.value().sections()) {
    PSDP_ASSIGN_OR_RETURN(std::vector<coll::AlgorithmRule> rules, algorithmRulesOf(section, loaded.path));
    for (const coll::AlgorithmRule& rule : rules) {
      loaded.largest_fragment_bytes = std::max(loaded.largest_fragment_bytes, rule.fragment_bytes);
      loaded.largest_depth = std::max(loaded.largest_depth, rule.depth);
    }
    for (const tune::EngineRule& rule : section.engine) {
      if (rule.fragment_bytes != 0 && rule.fragment_bytes < coll::kMinFragmentBytes) {
        return Status::invalidArgument("{}:{}: fragment of {} bytes, below the minimum of {}", loaded.path, rule.line,
                                       rule.fragment_bytes, coll::kMinFragmentBytes);
      }
      loaded.largest_fragment_bytes = std::max(loaded.largest_fragment_bytes, rule.fragment_bytes);
    }
  }
  loaded.file = std::make_shared<const tune::TuningFile>(std::move(file).value());
  return loaded;
}

bool hasSingleCopyLane(const std::vector<std::string>& lanes) {
  return std::any_of(lanes.begin(), lanes.end(),
                     [](const std::string& lane) { return lane == "cma" || lane == "knem" || lane == "xpmem"; });
}

coll::InterconnectTraits interconnectTraits(const tune::InterconnectSignature& signature) {
  coll::InterconnectTraits traits;
  if (!signature.lanes.empty()) traits.ring_single_copy = hasSingleCopyLane(signature.lanes);
  return traits;
}

Result<coll::AlgorithmTable> hostAlgorithmTable(const Config& config, const LoadedTuning& tuning,
                                                const tune::TuningSection* section, coll::InterconnectTraits traits) {
  std::vector<coll::AlgorithmRule> tuned;
  if (section != nullptr) {
    PSDP_ASSIGN_OR_RETURN(tuned, algorithmRulesOf(*section, tuning.path));
  }
  Result<coll::AlgorithmTable> table = coll::AlgorithmTable::make(config.algorithm, config.algorithms, tuned, traits);
  if (!table.isOk()) return table.status().withContext("PSDP_ALGORITHMS");
  Result<const coll::CollectiveProvider*> provider =
      coll::findCollectiveProvider(PSDP_MEMORY_HOST, config.host_collectives);
  if (!provider.isOk()) return provider.status().withContext("PSDP_HOST_COLLECTIVES");
  return provider.value()->algorithms(table.value());
}

Result<std::string> formatAlgorithmTable(const Config& config, const Environment& env, std::string_view signature) {
  PSDP_ASSIGN_OR_RETURN(LoadedTuning tuning, loadTuning(config, env));
  // A malformed signature is an error with or without a file to match it against.
  tune::InterconnectSignature job;
  if (!signature.empty()) {
    PSDP_ASSIGN_OR_RETURN(job, tune::parseSignatureText(signature, "signature"));
  }
  std::string header;
  const tune::TuningSection* section = nullptr;
  if (!tuning.file) {
    header = "# no tuning file\n";
  } else if (signature.empty()) {
    std::string sections;
    for (const tune::TuningSection& s : tuning.file->sections()) {
      sections += fmt::format("{}line {}: {}", sections.empty() ? "" : "; ", s.line, s.signature.format());
    }
    header = fmt::format(
        "# tuning file {}: not shown, a communicator adds the rules of the section that covers its interconnect "
        "(--signature picks one): {}\n",
        tuning.describe(), sections.empty() ? "no sections" : sections);
  } else {
    std::string why;
    section = tuning.file->sectionFor(job, &why);
    header = section != nullptr
                 ? fmt::format("# tuning file {}: the section of line {} covers {}\n", tuning.describe(), section->line,
                               job.format())
                 : fmt::format("# tuning file {} does not apply to {}: {}\n", tuning.describe(), job.format(), why);
  }
  coll::InterconnectTraits traits;
  if (!signature.empty()) {
    traits = interconnectTraits(job);
  } else {
    traits.ring_single_copy = config.progress_mode != PSDP_PROGRESS_CALLER;
  }
  PSDP_ASSIGN_OR_RETURN(coll::AlgorithmTable table, hostAlgorithmTable(config, tuning, section, traits));
  std::string engine;
  if (section != nullptr) {
    // The chunk engine's rules are no algorithm rules: shown as comments, in the tuning file's syntax.
    for (const tune::EngineRule& rule : section->engine) {
      engine += fmt::format("# {:<66} # tuning file line {}\n", tune::formatRule(rule), rule.line);
    }
  }
  return header + table.format() + engine;
}

tune::InterconnectSignature teamSignature(const std::string& provider, const std::vector<std::string>& member_lanes,
                                          const std::vector<int>& host_of_member) {
  tune::InterconnectSignature signature;
  signature.provider = provider;
  for (const std::string& lanes : member_lanes) {
    size_t start = 0;
    while (start < lanes.size()) {
      size_t comma = std::min(lanes.find(',', start), lanes.size());
      if (comma > start) signature.lanes.push_back(lanes.substr(start, comma - start));
      start = comma + 1;
    }
  }
  std::sort(signature.lanes.begin(), signature.lanes.end());
  signature.lanes.erase(std::unique(signature.lanes.begin(), signature.lanes.end()), signature.lanes.end());
  std::map<int, int> ranks_on;
  for (int host : host_of_member) ++ranks_on[host];
  signature.hosts = static_cast<int>(ranks_on.size());
  signature.ranks_per_host = ranks_on.empty() ? 0 : ranks_on.begin()->second;
  for (const auto& [host, ranks] : ranks_on) {
    if (ranks != signature.ranks_per_host) signature.ranks_per_host = 0;
  }
  return signature;
}

}  // namespace psdp::core
