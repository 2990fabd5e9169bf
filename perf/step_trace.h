// psdp-perf step --trace: the timelines of one step on every rank (psdp_state_step_events), gathered to
// rank 0 and written as one Chrome trace-event JSON file (open it in Perfetto or chrome://tracing): a
// process per rank, each stage of each chunk a begin/end pair ("b"/"e", id = the chunk) named after its
// stage, so that the chunks in flight at once lie side by side. Times are from the first event of any rank.
#pragma once

#include <psdp/psdp.h>

#include <string>

namespace psdp::perf {

// Collective over comm. Returns false on rank 0 when the file cannot be written (with a message on stderr).
bool writeStepTrace(psdp_comm_h comm, psdp_state_h state, const std::string& path);

const char* stepStageName(int stage);

}  // namespace psdp::perf
