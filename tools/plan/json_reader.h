// A minimal JSON reader for model shape files (shared/models/*.json): objects, arrays, strings, numbers,
// true/false/null. Numbers keep their text, so that 64-bit counts stay exact. No dependency beyond the
// standard library, as tools may use only psdp's public header.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace psdp::tools {

struct JsonMember;

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // the string, or the number as written
  std::vector<JsonValue> items;
  std::vector<JsonMember> members;  // in document order

  // The member called `key` of an object, or nullptr.
  const JsonValue* find(std::string_view key) const;
  // The number as a non-negative integer; nullopt for anything else (a sign, a fraction, an exponent).
  std::optional<uint64_t> asUint() const;
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

// Parses `text`, or returns nullopt and sets *error to "offset N: what was expected".
std::optional<JsonValue> parseJson(std::string_view text, std::string* error);

}  // namespace psdp::tools
