#include "tune/line_fields.h"

#include <charconv>
#include <climits>
#include <cstdint>

#include "base/config.h"

namespace psdp::tune {

Status LineRef::error(int column, std::string_view message) const {
  return Status::invalidArgument("{}:{}:{}: {}", name, line, column, message);
}

Result<std::vector<Field>> splitFields(std::string_view line, const LineRef& where) {
  if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
  std::vector<Field> fields;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
      ++i;
      continue;
    }
    size_t end = line.find_first_of(" \t\r", i);
    if (end == std::string_view::npos) end = line.size();
    std::string_view word = line.substr(i, end - i);
    Field field;
    field.column = static_cast<int>(i) + 1;
    size_t eq = word.find('=');
    if (eq == std::string_view::npos) {
      field.key = word;
    } else if (eq == 0 || eq + 1 == word.size() || word.find('=', eq + 1) != std::string_view::npos) {
      return where.error(field.column, fmt::format("'{}' is not a key=value field", word));
    } else {
      field.key = word.substr(0, eq);
      field.value = word.substr(eq + 1);
      field.has_value = true;
      field.value_column = field.column + static_cast<int>(eq) + 1;
    }
    fields.push_back(field);
    i = end;
  }
  return fields;
}

Result<size_t> parseByteCount(const Field& field, const LineRef& where) {
  auto bytes = parseBytes(field.value);
  if (!bytes.isOk()) return where.error(field.value_column, fmt::format("{}: {}", field.key, bytes.status().message()));
  return bytes.value();
}

namespace {

// Digits only (no sign, no spaces), within [min, max]; `column` where `text` starts.
Result<long long> parseDigits(std::string_view text, std::string_view key, int column, const LineRef& where,
                              long long min, long long max) {
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || text.front() == '-' || error != std::errc() || end != text.data() + text.size()) {
    return where.error(column, fmt::format("{}: '{}' is not a whole number", key, text));
  }
  if (value < min || value > max) {
    return where.error(column, fmt::format("{}: {} is outside [{}, {}]", key, value, min, max));
  }
  return value;
}

}  // namespace

Result<long long> parseWhole(const Field& field, const LineRef& where, long long min, long long max) {
  return parseDigits(field.value, field.key, field.value_column, where, min, max);
}

Status parseRankRange(const Field& field, const LineRef& where, int& lo, int& hi) {
  if (field.value == "*") {
    lo = 1;
    hi = INT_MAX;
    return Status::ok();
  }
  size_t dash = field.value.find('-');
  std::string_view first = field.value.substr(0, dash);
  PSDP_ASSIGN_OR_RETURN(long long a, parseDigits(first, field.key, field.value_column, where, 1, INT_MAX));
  long long b = a;
  if (dash != std::string_view::npos) {
    std::string_view second = field.value.substr(dash + 1);
    const int column = field.value_column + static_cast<int>(dash) + 1;
    if (second == "inf" || second.empty()) {
      b = INT_MAX;
    } else {
      PSDP_ASSIGN_OR_RETURN(b, parseDigits(second, field.key, column, where, 1, INT_MAX));
    }
    if (b < a) return where.error(column, fmt::format("{}: the range {} ends below its start", field.key, field.value));
  }
  lo = static_cast<int>(a);
  hi = static_cast<int>(b);
  return Status::ok();
}

Status parseByteRange(const Field& field, const LineRef& where, size_t& lo, size_t& hi) {
  if (field.value == "*") {
    lo = 0;
    hi = SIZE_MAX;
    return Status::ok();
  }
  size_t dash = field.value.find('-');
  if (dash == std::string_view::npos) {
    return where.error(
        field.value_column,
        fmt::format("{}: '{}' is not a range (<from>-<below>, e.g. 0-256K or 8M-inf)", field.key, field.value));
  }
  // The upper bound may be "inf" or empty (no bound); the lower one is a size.
  auto bound = [&](std::string_view text, int column, bool upper) -> Result<size_t> {
    if (upper && (text == "inf" || text.empty())) return SIZE_MAX;
    auto bytes = parseBytes(text);
    if (!bytes.isOk()) return where.error(column, fmt::format("{}: {}", field.key, bytes.status().message()));
    return bytes.value();
  };
  PSDP_ASSIGN_OR_RETURN(lo, bound(field.value.substr(0, dash), field.value_column, /*upper=*/false));
  const int column = field.value_column + static_cast<int>(dash) + 1;
  PSDP_ASSIGN_OR_RETURN(hi, bound(field.value.substr(dash + 1), column, /*upper=*/true));
  if (hi <= lo) return where.error(column, fmt::format("{}: the range {} is empty", field.key, field.value));
  return Status::ok();
}

std::string formatBytes(size_t bytes) {
  if (bytes == SIZE_MAX) return "inf";
  for (auto [shift, unit] : {std::pair{30u, 'G'}, std::pair{20u, 'M'}, std::pair{10u, 'K'}}) {
    if (bytes != 0 && bytes % (size_t{1} << shift) == 0) return fmt::format("{}{}", bytes >> shift, unit);
  }
  return fmt::format("{}", bytes);
}

}  // namespace psdp::tune
