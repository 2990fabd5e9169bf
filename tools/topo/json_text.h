// JSON string quoting for psdp-topo's --json and --dot output (graphviz quotes strings the same way).
#pragma once

#include <string>
#include <string_view>

namespace psdp::tools {

// `text` with quotes, backslashes and control characters escaped (\u00XX): names come from files and from
// the machine, so nothing about them is assumed.
std::string escaped(std::string_view text);

// escaped(text) in double quotes.
std::string quoted(std::string_view text);

}  // namespace psdp::tools
