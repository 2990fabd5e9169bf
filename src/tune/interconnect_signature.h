// What a tuning was measured on, as far as it decides the best settings: the collective provider, the
// transport lanes its ranks use (UCX's transports, e.g. "sysv" and "cma" within a host, "tcp" or "rc"
// across hosts), the number of hosts and the ranks on each. A tuning file's sections are each written for
// one signature; a section applies to a job only where its signature covers the job's.
//   text: provider=<name> lanes=<t1>,<t2>... hosts=<n> ranks-per-host=<n>   (any value may be "*": any)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tune/line_fields.h"

namespace psdp::tune {

struct InterconnectSignature {
  std::string provider = "*";      // "ucx", "nccl"; "*": any
  std::vector<std::string> lanes;  // sorted, distinct; empty: any
  int hosts = 0;                   // 0: any
  int ranks_per_host = 0;          // 0: any (a job's: its hosts hold different numbers of ranks)

  // The canonical text (fields in the order above, lanes sorted).
  std::string format() const;

  // Whether this signature (a section's, wildcards allowed) covers `job` (fully known). When it does not,
  // `why` says which field differs, e.g. "lanes are tcp here, cma,sysv in the file".
  bool covers(const InterconnectSignature& job, std::string* why) const;

  bool operator==(const InterconnectSignature&) const = default;
};

// Reads the fields of a "signature" line (all four, once each); `fields` starts after the keyword.
Result<InterconnectSignature> parseSignature(const std::vector<Field>& fields, const LineRef& where, int line_end);
// The same from text alone ("provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2"); errors name `name`
// and the column.
Result<InterconnectSignature> parseSignatureText(std::string_view text, std::string_view name);

}  // namespace psdp::tune
