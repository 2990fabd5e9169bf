// Tuning files (PSDP_TUNING_FILE, psdp-tune's output): the reader either refuses a file with an error that
// names it, a line and a column, or reads rules whose canonical text reads back to the same rules (and
// hash); lookups on what it read stay within its sections.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "tune/tuning_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto file = psdp::tune::TuningFile::parse(text, "f");
  if (!file.isOk()) {
    PSDP_FUZZ_CHECK(file.status().code() == PSDP_ERR_INVALID_ARGUMENT);
    PSDP_FUZZ_CHECK(file.status().message().rfind("f:", 0) == 0);
    return 0;
  }
  const std::string canonical = file.value().format();
  auto again = psdp::tune::TuningFile::parse(canonical, "canonical");
  PSDP_FUZZ_CHECK(again.isOk());
  PSDP_FUZZ_CHECK(again.value().format() == canonical);
  PSDP_FUZZ_CHECK(again.value().hash() == file.value().hash());
  for (const auto& section : file.value().sections()) {
    // A section's own signature is covered by it, if not by an earlier one.
    PSDP_FUZZ_CHECK(file.value().sectionFor(section.signature, nullptr) != nullptr);
    for (const auto& rule : section.collectives) {
      const std::string call = rule.collective == "*" ? "all-reduce" : rule.collective;
      const psdp::tune::CollectiveRule* found = section.findCollective(call, rule.min_ranks, rule.min_bytes);
      PSDP_FUZZ_CHECK(found != nullptr && found->line <= rule.line);
    }
  }
  return 0;
}
