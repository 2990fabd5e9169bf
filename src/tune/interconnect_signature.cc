#include "tune/interconnect_signature.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace psdp::tune {
namespace {

// A transport or provider name: lower-case letters, digits, '_' (UCX's names: sysv, posix, cma, tcp, rc_mlx5).
bool isName(std::string_view text) {
  return !text.empty() && text.size() <= 32 && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string countText(int n) {
  return n == 0 ? "*" : std::to_string(n);
}

std::string lanesText(const std::vector<std::string>& lanes) {
  return lanes.empty() ? "*" : fmt::format("{}", fmt::join(lanes, ","));
}

}  // namespace

std::string InterconnectSignature::format() const {
  return fmt::format("provider={} lanes={} hosts={} ranks-per-host={}", provider, lanesText(lanes), countText(hosts),
                     countText(ranks_per_host));
}

bool InterconnectSignature::covers(const InterconnectSignature& job, std::string* why) const {
  auto differs = [&](std::string_view what, const std::string& here, const std::string& file) {
    if (why != nullptr) *why = fmt::format("{} {} here, {} in the file", what, here, file);
    return false;
  };
  if (provider != "*" && provider != job.provider) return differs("the provider is", job.provider, provider);
  if (!lanes.empty() && lanes != job.lanes) return differs("lanes are", lanesText(job.lanes), lanesText(lanes));
  if (hosts != 0 && hosts != job.hosts) return differs("hosts are", countText(job.hosts), countText(hosts));
  if (ranks_per_host != 0 && ranks_per_host != job.ranks_per_host) {
    // A job's 0 means its hosts hold different numbers of ranks.
    return differs("ranks per host are", job.ranks_per_host == 0 ? "uneven" : countText(job.ranks_per_host),
                   countText(ranks_per_host));
  }
  return true;
}

Result<InterconnectSignature> parseSignature(const std::vector<Field>& fields, const LineRef& where, int line_end) {
  InterconnectSignature signature;
  bool seen[4] = {false, false, false, false};
  static constexpr std::string_view kKeys[4] = {"provider", "lanes", "hosts", "ranks-per-host"};
  for (const Field& field : fields) {
    auto key = std::find(std::begin(kKeys), std::end(kKeys), field.key);
    if (!field.has_value || key == std::end(kKeys)) {
      return where.error(field.column, fmt::format("'{}' is not a signature field (provider=, lanes=, hosts=, "
                                                   "ranks-per-host=)",
                                                   field.key));
    }
    const size_t index = static_cast<size_t>(key - std::begin(kKeys));
    if (seen[index]) return where.error(field.column, fmt::format("{} given twice", field.key));
    seen[index] = true;
    const bool any = field.value == "*";
    switch (index) {
      case 0:
        if (!any && !isName(field.value)) {
          return where.error(field.value_column, fmt::format("provider: '{}' is not a name", field.value));
        }
        signature.provider = std::string(field.value);
        break;
      case 1: {
        if (any) break;
        size_t start = 0;
        while (start <= field.value.size()) {
          size_t comma = field.value.find(',', start);
          if (comma == std::string_view::npos) comma = field.value.size();
          std::string_view lane = field.value.substr(start, comma - start);
          if (!isName(lane)) {
            return where.error(field.value_column + static_cast<int>(start),
                               fmt::format("lanes: '{}' is not a transport name", lane));
          }
          signature.lanes.emplace_back(lane);
          start = comma + 1;
        }
        std::sort(signature.lanes.begin(), signature.lanes.end());
        if (std::adjacent_find(signature.lanes.begin(), signature.lanes.end()) != signature.lanes.end()) {
          return where.error(field.value_column, fmt::format("lanes: '{}' names a transport twice", field.value));
        }
        break;
      }
      default: {
        if (any) break;
        PSDP_ASSIGN_OR_RETURN(long long n, parseWhole(field, where, 1, 1 << 20));
        (index == 2 ? signature.hosts : signature.ranks_per_host) = static_cast<int>(n);
        break;
      }
    }
  }
  for (size_t i = 0; i < 4; ++i) {
    if (!seen[i]) return where.error(line_end, fmt::format("the signature lacks {}= (\"*\" for any)", kKeys[i]));
  }
  return signature;
}

Result<InterconnectSignature> parseSignatureText(std::string_view text, std::string_view name) {
  const LineRef where{name, 1};
  PSDP_ASSIGN_OR_RETURN(std::vector<Field> fields, splitFields(text, where));
  return parseSignature(fields, where, static_cast<int>(text.size()) + 1);
}

}  // namespace psdp::tune
