// A trace of this process's collectives, asked for with PSDP_TRACE_FILE, in Chrome's trace-event JSON (open
// it in Perfetto or chrome://tracing): one slice per operation from its start to its completion, on one
// track per team (communicator), so that operations of several teams in flight at once show side by side,
// and one process per rank; the chunk engine adds a track per stage of its steps (engine/step_timeline.h).
// Slices of one track that overlap in time (operations in flight together) go to lanes of their own, shown
// as consecutive tracks named after it, since a trace-event track must nest its slices. Events go to a buffer made once
// when tracing starts (kCapacity events; later ones are counted, not kept); the file is written when the process exits,
// or by stop(). Off (the default) it costs one relaxed atomic load per operation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace psdp::trace {

inline constexpr size_t kCapacity = size_t{1} << 16;

// Starts tracing into `path` ("%r" replaced by `rank`), the first time it is called with a non-empty path in
// this process; later calls change nothing.
void start(const std::string& path, int rank);
bool on();
// Nanoseconds on the steady clock.
uint64_t nowNs();
// Records one slice on `track` (a team's id); `name` is copied, cut at 63 characters.
void slice(uint32_t track, std::string_view name, uint64_t begin_ns, uint64_t end_ns);
// Names `track` in the file (default: "team <track>"). Kept whether or not tracing is on.
void nameTrack(uint32_t track, std::string_view name);
// Writes the file now and stops; false (and a line on stderr) when it cannot be written. Also run at exit.
bool stop();

}  // namespace psdp::trace
