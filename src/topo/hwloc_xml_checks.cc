#include "topo/hwloc_xml_checks.h"

#include <hwloc.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string_view>
#include <utility>

#include "base/raii.h"

namespace psdp::topo {
namespace {

bool hasAttribute(const xmlNode* node, const char* name) {
  return xmlHasProp(node, reinterpret_cast<const xmlChar*>(name)) != nullptr;
}

using Bitmap = std::unique_ptr<hwloc_bitmap_s, FnDeleter<hwloc_bitmap_free>>;

// The bitmap an attribute holds. REQUIRES: checkBitmaps passed (hwloc's reader asserts on some malformed
// ones).
Bitmap attributeBitmap(const xmlNode* node, const char* name) {
  Bitmap bitmap(hwloc_bitmap_alloc());
  xmlChar* text = xmlGetProp(node, reinterpret_cast<const xmlChar*>(name));
  if (bitmap && text != nullptr) hwloc_bitmap_sscanf(bitmap.get(), reinterpret_cast<const char*>(text));
  xmlFree(text);
  return bitmap;
}

// What hwloc 2.9's XML import crashes on although the document is well-formed, in its objects' sets:
// - a cpuset without its complete_cpuset (or a nodeset without its complete_nodeset) passes its checks and
//   is then dereferenced while siblings are sorted (fixed upstream in open-mpi/hwloc#783);
// - a cpuset (nodeset) with members its complete_cpuset (complete_nodeset) lacks: the import reads past
//   what it built for the complete set (a null dereference).
// hwloc's own exports always write the sets in pairs, each complete set a superset of the other, so such a
// document is refused here, naming the line.
Status checkObjectSets(const xmlNode* node, const std::string& origin) {
  for (; node != nullptr; node = node->next) {
    if (node->type != XML_ELEMENT_NODE) continue;
    if (xmlStrcmp(node->name, reinterpret_cast<const xmlChar*>("object")) == 0) {
      for (auto [set, complete] : {std::pair{"cpuset", "complete_cpuset"}, std::pair{"nodeset", "complete_nodeset"}}) {
        if (!hasAttribute(node, set)) continue;
        if (!hasAttribute(node, complete)) {
          return Status::invalidArgument("{}:{}: an object has a {} but no {} (hwloc writes both)", origin,
                                         xmlGetLineNo(node), set, complete);
        }
        Bitmap part = attributeBitmap(node, set), whole = attributeBitmap(node, complete);
        if (!part || !whole) return Status::system("{}: no memory for a bitmap", origin);
        if (!hwloc_bitmap_isincluded(part.get(), whole.get())) {
          return Status::invalidArgument("{}:{}: an object's {} has members its {} lacks (hwloc writes a superset)",
                                         origin, xmlGetLineNo(node), set, complete);
        }
      }
    }
    PSDP_RETURN_IF_ERROR(checkObjectSets(node->children, origin));
  }
  return Status::ok();
}

// Whether `text` is a bitmap as hwloc writes one ("0x00000003", "0x00000303,,0x03030303", "0xf...f,0x1"):
// comma-separated words of "0x" and 1 to 8 hex digits, empty (zero) words only between others, and
// hwloc's "0xf...f" (all ones from there up) as the first. hwloc's reader asserts on some malformed ones
// (a leading comma aborts the process in hwloc 2.9).
bool isHwlocBitmap(std::string_view text) {
  if (text.starts_with("0xf...f")) {
    text.remove_prefix(7);
    if (text.empty()) return true;
    if (text.front() != ',') return false;
    text.remove_prefix(1);
  }
  if (text.empty() || text.front() == ',' || text.back() == ',') return false;
  while (!text.empty()) {
    const std::string_view word = text.substr(0, text.find(','));
    text.remove_prefix(std::min(text.size(), word.size() + 1));
    if (word.empty()) continue;
    if (!word.starts_with("0x") || word.size() < 3 || word.size() > 10) return false;
    for (char c : word.substr(2)) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    }
  }
  return true;
}

// Every attribute named like a set (cpuset, complete_nodeset, initiator_cpuset, ...) of every element.
Status checkBitmaps(const xmlNode* node, const std::string& origin) {
  for (; node != nullptr; node = node->next) {
    if (node->type != XML_ELEMENT_NODE) continue;
    for (const xmlAttr* attr = node->properties; attr != nullptr; attr = attr->next) {
      const std::string_view name = reinterpret_cast<const char*>(attr->name);
      if (!name.ends_with("cpuset") && !name.ends_with("nodeset")) continue;
      xmlChar* value = xmlNodeListGetString(node->doc, attr->children, 1);
      const bool ok = value != nullptr && isHwlocBitmap(reinterpret_cast<const char*>(value));
      xmlFree(value);
      if (!ok) {
        return Status::invalidArgument("{}:{}: {} is not a bitmap as hwloc writes one", origin, xmlGetLineNo(node),
                                       name);
      }
    }
    PSDP_RETURN_IF_ERROR(checkBitmaps(node->children, origin));
  }
  return Status::ok();
}

}  // namespace

Status checkHwlocDocument(const xmlDoc* doc, const std::string& origin) {
  const xmlNode* root = xmlDocGetRootElement(doc);
  xmlChar* version = root != nullptr ? xmlGetProp(root, reinterpret_cast<const xmlChar*>("version")) : nullptr;
  const bool hwloc2 = version != nullptr && std::string_view(reinterpret_cast<const char*>(version)).starts_with("2.");
  xmlFree(version);
  if (!hwloc2) {
    return Status::invalidArgument(
        "{}: not an hwloc 2 export (<topology version=\"2.0\">); export it again with hwloc 2's lstopo", origin);
  }
  PSDP_RETURN_IF_ERROR(checkBitmaps(root, origin));
  return checkObjectSets(root, origin);
}

}  // namespace psdp::topo
