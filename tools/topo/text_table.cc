#include "text_table.h"

#include <algorithm>

namespace psdp::tools {

void printTable(const std::vector<std::vector<std::string>>& rows, const std::string& indent, std::ostream& out) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line.append(width[c] - row[c].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

}  // namespace psdp::tools
