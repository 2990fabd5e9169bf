#include "json_text.h"

#include <cstdio>

namespace psdp::tools {

std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string quoted(std::string_view text) {
  return "\"" + escaped(text) + "\"";
}

}  // namespace psdp::tools
