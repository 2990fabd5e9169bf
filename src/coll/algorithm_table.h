// Which algorithm a collective runs, as data: a list of rules, each mapping a collective, a range of rank
// counts and a range of sizes (the whole buffer, in bytes) to an algorithm and its transfer parameters. The
// first rule that matches a call decides it. The built-in rules are the choices measured with psdp-perf on
// this project's machines (README, "Collectives"). In front of them, in this order: PSDP_ALGORITHMS, rules
// of the user's; PSDP_ALGORITHM=ring|rhd|direct, one blanket rule per collective; and the rules a tuning
// file holds for the communicator's interconnect (core/tuning.h). So every choice the library makes can be
// changed without a rebuild, and the tuner can sweep them.
//
// Where a rule's algorithm cannot run a call the call falls back, as it always has: recursive halving and
// doubling needs a power-of-two rank count for reduce-scatter and all-gather and vectors that fit one
// staging fragment, and runs the ring otherwise; direct needs every rank's buffers within reach (one host,
// and either psdp_mem_alloc buffers, threads of one process, or CMA where the rule allows it) and runs its
// fallback otherwise. PSDP_DETERMINISTIC overrides every rule with the ring.
//
// Rule text (PSDP_ALGORITHMS): rules separated by ';', each
//   <collective>:<min bytes>-<max bytes>=<algorithm>[,<option>=<value>]...
// collective: all-reduce, reduce-scatter, all-gather, broadcast or * (every one); sizes with an optional K, M
// or G (powers of 1024), from min up to but not including max ("inf" or nothing: no bound); algorithm: ring,
// rhd or direct;
// options: ranks=<min>-<max> (rank counts, inclusive), fallback=ring|rhd (direct's), cma=0|1 (direct may
// read private buffers with CMA), stream=0|1 (direct stores its results past the cache), backoff=<n>
// (direct: after a fallback, up to n operations in a row skip trying; 0 or absent: try every time),
// fragment=<bytes> and depth=<fragments in flight per direction> (ring transfers; 0 or absent: the
// communicator's).
// Example: "all-reduce:0-64K=rhd;all-reduce:64K-=ring,fragment=256K,depth=8".
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "coll/op_header.h"

namespace psdp::coll {

enum class Algorithm : uint8_t { kRing, kRecursive, kDirect };

const char* algorithmName(Algorithm algorithm);  // "ring", "rhd", "direct"

// Fragments in flight per direction of a ring, unless a rule says otherwise: enough to keep a link busy
// while a fragment is being reduced.
inline constexpr int kDefaultDepth = 4;
// The most a rule may ask for: the completions of every task slot are made for the table's largest depth.
inline constexpr int kMaxDepth = 64;
// The longest direct back-off a rule may ask for.
inline constexpr int kMaxDirectBackoff = 1 << 16;

struct AlgorithmRule {
  // The collectives it applies to: one, or every one (any = true).
  bool any_kind = false;
  OpKind kind = OpKind::kAllReduce;
  int min_ranks = 1;
  int max_ranks = INT32_MAX;
  size_t min_bytes = 0;
  size_t max_bytes = SIZE_MAX;  // exclusive; SIZE_MAX: no bound

  Algorithm algorithm = Algorithm::kRing;
  Algorithm fallback = Algorithm::kRing;  // direct's, where some buffer is out of reach
  bool cma = false;                       // direct may read private buffers of other processes with CMA
  bool streaming = false;                 // direct stores results with non-temporal stores
  // Direct: after an operation that fell back, the next 1, 2, 4, ... up to this many skip trying (every rank
  // skips the same ones); 0: every operation tries.
  int backoff = 0;
  size_t fragment_bytes = 0;        // ring transfers; 0: the communicator's
  int depth = 0;                    // ring fragments in flight per direction; 0: kDefaultDepth
  const char* origin = "built-in";  // "built-in", "PSDP_ALGORITHM", "PSDP_ALGORITHMS", "tuning file", a provider
  int line = 0;                     // of a tuning file's rule; 0: none

  // "built-in", "tuning file line 7": where the rule comes from, for psdp-info and the debug log.
  std::string originText() const;

  bool matches(OpKind call, int nranks, size_t bytes) const {
    return (any_kind || kind == call) && nranks >= min_ranks && nranks <= max_ranks && bytes >= min_bytes &&
           (bytes < max_bytes || max_bytes == SIZE_MAX);
  }
};

// The names rules use, as PSDP_ALGORITHMS and tuning files write them (surrounding spaces ignored). Errors:
// invalid argument naming the word and what it may be.
Result<Algorithm> parseAlgorithmName(std::string_view text);  // ring, rhd, direct
// all-reduce, reduce-scatter, all-gather, broadcast, or * (every one), into `rule`.
Status parseCollectiveName(std::string_view text, AlgorithmRule& rule);

// What the built-in rules depend on besides the call: whether the ring's messages between processes of a
// host are copied once, the transport reading the sender's buffer (UCX's CMA, KNEM or XPMEM rendezvous), or
// pass through shared memory in eager-sized pieces (UCX under caller progress, or without those transports).
// Direct reductions that must read private buffers with CMA beat the first only from 8 MiB, the second from
// 256 KiB.
struct InterconnectTraits {
  bool ring_single_copy = true;
};

class AlgorithmTable {
 public:
  // The built-in rules alone, for an interconnect with `traits`.
  explicit AlgorithmTable(InterconnectTraits traits = {});

  // `user_rules`: PSDP_ALGORITHMS text (empty: none); `forced`: PSDP_ALGORITHM (auto adds nothing);
  // `tuned`: a tuning file's rules, each checked by checkRule; then the built-in rules for `traits`. Errors:
  // invalid argument naming the rule (by number and text) and what is wrong with it.
  static Result<AlgorithmTable> make(psdp_algorithm_t forced, std::string_view user_rules,
                                     std::span<const AlgorithmRule> tuned = {}, InterconnectTraits traits = {});

  // One rule, the ring for every call (fragment and depth: the communicator's), whatever the environment
  // says; `origin` is the rule's.
  static AlgorithmTable ringOnly(const char* origin);

  // Parses rule text (see the top of this file). Errors as make().
  static Result<std::vector<AlgorithmRule>> parse(std::string_view text);
  // Whether a rule made otherwise (a tuning file's) stays within what the collectives can run: a fragment
  // of 64 bytes to 1 GiB, depth and backoff within kMaxDepth and kMaxDirectBackoff, a non-empty size range,
  // a fallback that is not direct. Errors: invalid argument saying which.
  static Status checkRule(const AlgorithmRule& rule);

  // The first rule matching the call; the built-in rules match every call with data.
  const AlgorithmRule& find(OpKind kind, int nranks, size_t bytes) const;

  std::span<const AlgorithmRule> rules() const { return rules_; }
  // The largest fragment (0 in a rule: `fragment_bytes`) and depth any rule asks for: the staging and
  // completions a communicator makes must hold them.
  size_t maxFragmentBytes(size_t fragment_bytes) const;
  int maxDepth() const;

  // One line per rule, in order: what psdp-info prints.
  std::string format() const;
  // The text of one rule in the syntax parse() reads.
  static std::string formatRule(const AlgorithmRule& rule);

 private:
  explicit AlgorithmTable(std::vector<AlgorithmRule> rules) : rules_(std::move(rules)) {}
  std::vector<AlgorithmRule> rules_;
};

}  // namespace psdp::coll
