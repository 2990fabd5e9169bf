// One line of a tuning file as fields: whitespace-separated words, each "key=value" or a bare word, with
// the 1-based column where it starts so that every error can point at it. '#' starts a comment.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace psdp::tune {

struct Field {
  std::string_view key;    // the whole word for a bare word
  std::string_view value;  // empty for a bare word
  bool has_value = false;
  int column = 0;        // of the word
  int value_column = 0;  // of the value
};

// Where a line is, for messages: "<name>:<line>".
struct LineRef {
  std::string_view name;
  int line = 0;

  // "<name>:<line>:<column>: <message>", as an invalid-argument status.
  Status error(int column, std::string_view message) const;
};

// The fields of `line` (which must outlive them). Errors: a word that starts or ends with '=' or has two.
Result<std::vector<Field>> splitFields(std::string_view line, const LineRef& where);

// Parsers of one value, each naming the field and pointing at its value on error.
Result<size_t> parseByteCount(const Field& field, const LineRef& where);  // "4096", "512K", "1M", "2G"
// Digits only (no sign), within [min, max].
Result<long long> parseWhole(const Field& field, const LineRef& where, long long min, long long max);
// "<a>-<b>" inclusive, "<a>" alone, "<a>-inf" (or "<a>-"), or "*" (every count); counts from 1.
Status parseRankRange(const Field& field, const LineRef& where, int& lo, int& hi);
// "<lo>-<hi>" from lo up to but not including hi; "inf" or nothing for hi: no bound (SIZE_MAX); "*": all.
Status parseByteRange(const Field& field, const LineRef& where, size_t& lo, size_t& hi);
// The text of a byte count as parseByteCount reads it, in the largest unit that divides it.
std::string formatBytes(size_t bytes);

}  // namespace psdp::tune
