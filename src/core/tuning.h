// The tuning file a communicator applies (tune/tuning_file.h). At init it is found (PSDP_TUNING_FILE, else
// the search path), read and checked whole, and its hash joins the settings every rank must share
// (core/agreed_settings.h). Once the team is connected, every member all-gathers the transports of its
// lanes to the others, so that all of them compute the same signature of the team's interconnect (the
// union of the lanes, the hosts and the ranks on each) and so choose the same section; that section's
// collective rules go between PSDP_ALGORITHM's and the built-in ones (coll/algorithm_table.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/environment.h"
#include "base/status.h"
#include "coll/algorithm_table.h"
#include "tune/tuning_file.h"

namespace psdp::core {

struct LoadedTuning {
  std::shared_ptr<const tune::TuningFile> file;  // null: no tuning file
  std::string path;                              // where it was read
  std::string found_by;                          // "PSDP_TUNING_FILE" or "the search path"
  // The largest fragment and depth of any rule of any section (engine rules' fragments included): what the
  // collectives' staging is made for, so that whichever section applies fits.
  size_t largest_fragment_bytes = 0;
  int largest_depth = 0;

  // What every rank must agree on: the hash of the rules (TuningFile::hash); 0 without a file.
  uint64_t hash() const { return file ? file->hash() : 0; }
  // "/etc/psdp/tuning (the search path)", or "no tuning file".
  std::string describe() const;
};

// Where a tuning file is looked for when PSDP_TUNING_FILE is empty, in order: $XDG_CONFIG_HOME/psdp/tuning
// (else $HOME/.config/psdp/tuning), then /etc/psdp/tuning.
std::vector<std::string> tuningSearchPath(const Environment& env);

// The file `config.tuning_file` names ("none": none; empty: the first of the search path that exists), read
// and checked: each of its collective rules must be one the collectives run (AlgorithmTable::checkRule).
// Errors: system (the file cannot be read), invalid argument ("<path>:<line>:<column>: what").
Result<LoadedTuning> loadTuning(const Config& config, const Environment& env);

// A section's collective rules as algorithm rules, in order, with their lines as origins. Errors as
// loadTuning's.
Result<std::vector<coll::AlgorithmRule>> algorithmRulesOf(const tune::TuningSection& section, const std::string& path);

// Whether transports of lanes (Transport::laneTransports' names) include a single-copy one: UCX's cma,
// knem or xpmem, whose rendezvous reads the sender's buffer.
bool hasSingleCopyLane(const std::vector<std::string>& lanes);

// What the built-in rules need to know of an interconnect (coll::InterconnectTraits): its ring copies once
// where its lanes include a single-copy transport, or where they are not known (a signature with lanes "*").
coll::InterconnectTraits interconnectTraits(const tune::InterconnectSignature& signature);

// The table the host collectives of a communicator with `config` follow where `section` (of tuning.file;
// null: none) applies, on an interconnect with `traits`: PSDP_ALGORITHMS, PSDP_ALGORITHM, the section's
// rules and the built-in ones, as PSDP_HOST_COLLECTIVES's provider takes them. Errors: invalid argument
// naming the variable.
Result<coll::AlgorithmTable> hostAlgorithmTable(const Config& config, const LoadedTuning& tuning,
                                                const tune::TuningSection* section, coll::InterconnectTraits traits);

// What psdp-info --algorithms prints: hostAlgorithmTable's rules, one per line, after a comment line
// saying which tuning file is loaded and, for `signature` (empty: none given), which section applies or
// why none does; without a signature the comment lists the sections and the table has no tuned rules.
// The built-in rules are those for the signature's lanes; without a signature, for UCX's default
// transports under `config`'s progress mode (caller progress: no single-copy rendezvous, see
// transport/ucx/ucx_context.h). Errors: as hostAlgorithmTable's and loadTuning's; invalid argument for a
// malformed signature.
Result<std::string> formatAlgorithmTable(const Config& config, const Environment& env, std::string_view signature);

// The signature of a team's interconnect: `provider` (the transport's name), the union of the lane
// transports every member reported (comma-separated, one string per member), the hosts its members are on
// (`host_of_member`, one host index per member), and the ranks on each host (0 where hosts differ in it).
tune::InterconnectSignature teamSignature(const std::string& provider, const std::vector<std::string>& member_lanes,
                                          const std::vector<int>& host_of_member);

}  // namespace psdp::core
