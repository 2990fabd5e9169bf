// libxml2 rather than a reader of our own: topology files in the wild carry licence comments, XML declarations,
// both quote styles and escaped characters, and a hand-written reader would need its own hardening against
// malformed input. libxml2 is already in the dependency closure (Debian's libhwloc15 depends on it).
#include "topo/xml_document.h"

#include <libxml/parser.h>

#include <algorithm>
#include <cctype>
#include <climits>

namespace psdp::topo {
namespace {

using XmlParser = std::unique_ptr<xmlParserCtxt, FnDeleter<xmlFreeParserCtxt>>;

// libxml2 goes on after the first error and its "last error" is then a consequence ("premature end of data");
// the first one says what is wrong and where. Kept through the context's _private slot, so no global state.
struct FirstXmlError {
  bool seen = false;
  int line = 0;
  std::string message;
};

void keepFirstXmlError(void* context, xmlErrorPtr error) {
  auto* first = static_cast<FirstXmlError*>(static_cast<xmlParserCtxt*>(context)->_private);
  if (first == nullptr || first->seen || error == nullptr || error->level < XML_ERR_ERROR) return;
  first->seen = true;
  first->line = error->line;
  std::string_view why = error->message != nullptr ? error->message : "malformed document";
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.remove_suffix(1);
  first->message = why;
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

// Topology files are read as UTF-8 (ASCII included), whatever encoding their XML declaration names: any
// other name sends libxml2 (and hwloc's import after it) through iconv, where a fuzzed declaration such as
// "UTF-7" crashed the process, and no topology exporter writes another encoding. Returns why a declaration
// is refused, or an empty string.
std::string refusedEncoding(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte order mark
  if (!text.starts_with("<?xml")) return {};
  std::string_view declaration = text.substr(0, text.find("?>"));
  size_t at = declaration.find("encoding");
  if (at == std::string_view::npos) return {};
  std::string_view rest = declaration.substr(at + 8);
  auto skipSpace = [&rest] {
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) rest.remove_prefix(1);
  };
  skipSpace();
  if (rest.empty() || rest.front() != '=') return "its XML declaration has a malformed encoding";
  rest.remove_prefix(1);
  skipSpace();
  const char quote = rest.empty() ? '\0' : rest.front();
  const size_t end = quote == '"' || quote == '\'' ? rest.find(quote, 1) : std::string_view::npos;
  if (end == std::string_view::npos) return "its XML declaration has a malformed encoding";
  const std::string_view name = rest.substr(1, end - 1);
  if (equalsIgnoringCase(name, "UTF-8") || equalsIgnoringCase(name, "US-ASCII") || equalsIgnoringCase(name, "ASCII")) {
    return {};
  }
  return fmt::format("its XML declaration names encoding '{:.32}'; topology files are read as UTF-8", name);
}

}  // namespace

Result<XmlDocument> parseXmlDocument(std::string_view text, const std::string& origin) {
  if (text.size() >= INT_MAX) return Status::invalidArgument("{}: topology file too large", origin);
  const std::string encoding = refusedEncoding(text);
  if (!encoding.empty()) return Status::invalidArgument("{}: {}", origin, encoding);
  XmlParser parser(xmlNewParserCtxt());
  if (!parser) return Status::system("{}: cannot create an XML parser", origin);
  FirstXmlError first_error;
  parser->_private = &first_error;
  parser->sax->serror = keepFirstXmlError;  // reported with the context as user data
  // NONET: a topology file never fetches anything; NOERROR/NOWARNING: errors come back as a Status instead of
  // going to stderr.
  XmlDocument doc(xmlCtxtReadMemory(parser.get(), text.data(), static_cast<int>(text.size()), origin.c_str(), nullptr,
                                    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
  if (!doc || first_error.seen) {
    if (!first_error.seen) return Status::invalidArgument("{}: malformed XML", origin);
    return Status::invalidArgument("{}:{}: malformed XML: {}", origin, first_error.line, first_error.message);
  }
  return doc;
}

}  // namespace psdp::topo
