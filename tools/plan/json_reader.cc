#include "json_reader.h"

#include <cctype>
#include <charconv>

namespace psdp::tools {

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [name, value] : members) {
    if (name == key) return &value;
  }
  return nullptr;
}

std::optional<uint64_t> JsonValue::asUint() const {
  uint64_t v = 0;
  if (kind != Kind::kNumber) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

namespace {

// Recursive descent; nesting depth is bounded so that a hostile file cannot exhaust the stack.
class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  std::optional<JsonValue> document(std::string* error) {
    JsonValue v;
    if (value(v, 0)) {
      skipSpace();
      if (pos_ == s_.size()) return v;
      fail("end of input");
    }
    *error = "offset " + std::to_string(pos_) + ": expected " + expected_;
    return std::nullopt;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool fail(const char* what) {
    expected_ = what;
    return false;
  }
  void skipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  bool value(JsonValue& v, int depth) {
    if (depth > kMaxDepth) return fail("less nesting");
    skipSpace();
    if (pos_ >= s_.size()) return fail("a value");
    const char c = s_[pos_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v.kind = JsonValue::Kind::kString;
      return string(v.text);
    }
    if (literal("true")) {
      v.kind = JsonValue::Kind::kBool;
      v.boolean = true;
      return true;
    }
    if (literal("false")) {
      v.kind = JsonValue::Kind::kBool;
      return true;
    }
    if (literal("null")) return true;
    return number(v);
  }

  bool number(JsonValue& v) {
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' ||
                                s_[pos_] == '+' || s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
    }
    if (pos_ == start) return fail("a value");
    v.kind = JsonValue::Kind::kNumber;
    v.text = std::string(s_.substr(start, pos_ - start));
    return true;
  }

  // Escapes other than \uXXXX are decoded; \uXXXX is kept as written (names in shape files are ASCII).
  bool string(std::string& out) {
    ++pos_;  // the opening quote
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\' && pos_ < s_.size()) {
        const char e = s_[pos_++];
        static constexpr std::string_view kFrom = "\"\\/bfnrt", kTo = "\"\\/\b\f\n\r\t";
        const size_t k = kFrom.find(e);
        if (k != std::string_view::npos) {
          c = kTo[k];
        } else {
          out += '\\';
          c = e;
        }
      }
      out += c;
    }
    if (pos_ >= s_.size()) return fail("a closing quote");
    ++pos_;
    return true;
  }

  bool array(JsonValue& v, int depth) {
    v.kind = JsonValue::Kind::kArray;
    ++pos_;
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
    while (true) {
      v.items.emplace_back();
      if (!value(v.items.back(), depth + 1)) return false;
      skipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
      return fail("',' or ']'");
    }
  }

  bool object(JsonValue& v, int depth) {
    v.kind = JsonValue::Kind::kObject;
    ++pos_;
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
    while (true) {
      skipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("a member name");
      std::string key;
      if (!string(key)) return false;
      skipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return fail("':'");
      ++pos_;
      v.members.push_back(JsonMember{std::move(key), JsonValue{}});
      if (!value(v.members.back().value, depth + 1)) return false;
      skipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
      return fail("',' or '}'");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  const char* expected_ = "";
};

}  // namespace

std::optional<JsonValue> parseJson(std::string_view text, std::string* error) {
  return Parser(text).document(error);
}

}  // namespace psdp::tools
