// The tuning file: measured settings per interconnect, which the library applies (core/tuning.h).
// Text, one statement per line, '#' to the end of a line a comment:
//
//   psdp-tuning 1                                     the format and its version, first
//   signature provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2
//   all-reduce ranks=2 bytes=0-256K algorithm=rhd
//   all-reduce ranks=2 bytes=256K-8M algorithm=direct cma=0 backoff=64
//   reduce-scatter ranks=2-8 bytes=8M-inf algorithm=ring fragment=512K depth=8
//   engine ranks=* chunk-bytes=* window=4 grouping=2
//
// A signature line (interconnect_signature.h) starts a section; the rules after it, up to the next
// signature, are that section's. A collective rule: the collective (all-reduce, reduce-scatter, all-gather,
// broadcast, or * for every one), then fields: ranks=<a>-<b> (inclusive; <a> alone; * any; default any),
// bytes=<from>-<below> (the whole buffer; "inf" or nothing above: no bound; default any), algorithm=ring|
// rhd|direct (required), and optionally fallback=ring|rhd, cma=0|1, stream=0|1, backoff=<n>,
// fragment=<bytes>, depth=<n>: what PSDP_ALGORITHMS says of them (coll/algorithm_table.h). An engine rule
// sets the chunk engine's window (chunks in flight), grouping (plan chunks per transfer) and fragment (of
// its collectives' ring transfers, in place of the collective rules') by rank count and plan chunk size. Within a
// section the first rule that matches a call decides it. Sizes take K, M or G (powers of 1024). Every error names the
// file, the line and the column.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tune/interconnect_signature.h"

namespace psdp::tune {

inline constexpr int kFormatVersion = 1;
// Bounds on what is read, so that a hostile or broken file costs little.
inline constexpr size_t kMaxFileBytes = size_t{1} << 20;
inline constexpr size_t kMaxRulesPerSection = 4096;
inline constexpr size_t kMaxSections = 256;

struct CollectiveRule {
  std::string collective;  // all-reduce, reduce-scatter, all-gather, broadcast, or "*"
  int min_ranks = 1;
  int max_ranks = INT_MAX;
  size_t min_bytes = 0;
  size_t max_bytes = SIZE_MAX;  // exclusive; SIZE_MAX: no bound
  std::string algorithm;        // ring, rhd, direct
  std::string fallback;         // ring, rhd; empty: not given
  int cma = -1;                 // 0 or 1; -1: not given
  int stream = -1;              // 0 or 1; -1: not given
  int backoff = -1;             // -1: not given
  size_t fragment_bytes = 0;    // 0: not given
  int depth = 0;                // 0: not given
  int line = 0;                 // where it was read

  bool matches(std::string_view call, int nranks, size_t bytes) const {
    return (collective == "*" || collective == call) && nranks >= min_ranks && nranks <= max_ranks &&
           bytes >= min_bytes && (max_bytes == SIZE_MAX || bytes < max_bytes);
  }
};

struct EngineRule {
  int min_ranks = 1;
  int max_ranks = INT_MAX;
  size_t min_chunk_bytes = 0;
  size_t max_chunk_bytes = SIZE_MAX;  // exclusive; SIZE_MAX: no bound
  int window = 0;                     // chunks in flight; 0: not given
  int grouping = 0;                   // plan chunks per transfer; 0: not given
  size_t fragment_bytes = 0;          // of the engine's ring transfers; 0: not given
  int line = 0;

  bool matches(int nranks, size_t chunk_bytes) const {
    return nranks >= min_ranks && nranks <= max_ranks && chunk_bytes >= min_chunk_bytes &&
           (max_chunk_bytes == SIZE_MAX || chunk_bytes < max_chunk_bytes);
  }
};

struct TuningSection {
  InterconnectSignature signature;
  std::vector<CollectiveRule> collectives;
  std::vector<EngineRule> engine;
  int line = 0;  // of its signature

  // The first rule matching the call, or null.
  const CollectiveRule* findCollective(std::string_view collective, int nranks, size_t bytes) const;
  const EngineRule* findEngine(int nranks, size_t chunk_bytes) const;
};

// The canonical text of one rule, as TuningFile::format() writes it.
std::string formatRule(const CollectiveRule& rule);
std::string formatRule(const EngineRule& rule);

class TuningFile {
 public:
  // `name` (a path) only labels errors. Errors: invalid argument "<name>:<line>:<column>: <what>".
  static Result<TuningFile> parse(std::string_view text, std::string_view name);
  // Reads and parses the file at `path`. Errors: system (cannot read it), invalid argument (too large, or
  // as parse()).
  static Result<TuningFile> load(const std::string& path);

  // The first section whose signature covers `job`, or null with `why` saying, for each section, what
  // differs ("no section: line 2: lanes are tcp here, cma,sysv in the file; ...").
  const TuningSection* sectionFor(const InterconnectSignature& job, std::string* why) const;

  const std::vector<TuningSection>& sections() const { return sections_; }

  // The canonical text: parse(format()) reads back the same rules, and format() of that is the same text.
  std::string format() const;
  // 64-bit FNV-1a of format(): equal for files that say the same, whatever their comments and spacing.
  uint64_t hash() const;

 private:
  std::vector<TuningSection> sections_;
};

}  // namespace psdp::tune
