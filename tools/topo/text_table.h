// Left-aligned columns for psdp-topo's text output: widths follow the longest cell, so long device names
// (an NCCL file names GPUs by bus id) never break the alignment.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace psdp::tools {

// Prints rows (the first is the header) with two spaces between columns, each line indented by `indent`.
void printTable(const std::vector<std::vector<std::string>>& rows, const std::string& indent, std::ostream& out);

}  // namespace psdp::tools
