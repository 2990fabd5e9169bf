// What a transport leaves for the other processes of its host to read once it is gone: whether it had
// learned of a failure (or was closing) before its process exited. A peer that sees several processes of
// its job exit at once can then tell the one that died first (killed, crashed: its note still says it was
// running) from the ones that left because of it (their notes say they had failed), which neither pidfds nor
// message order can: UCX's shared-memory FIFO is written by every sender, and a sender killed between
// claiming a slot and filling it leaves every later message to that receiver stuck behind the slot, the
// failure notices of the others included.
//
// The page also holds a heartbeat, a counter the transport bumps on every progress pass: a peer of the host
// that seems not to answer a liveness probe (Transport::probePeers) but whose heartbeat moves is alive, and
// its answer was only held up (a FIFO blocked by a stopped sender, as above).
//
// The note is one page of shared memory (shared_segment.h) per transport; its reference travels with the
// transport's address, and each peer of the host maps it at connect, while the owner is surely alive. A
// peer whose page cannot be mapped (another host, no ptrace-read permission) has an unknown note.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "transport/peer_segment_map.h"
#include "transport/process_identity.h"
#include "transport/shared_segment.h"

namespace psdp::transport {

class ExitNotes {
 public:
  enum class Note : uint32_t { kUnknown = 0, kRunning = 1, kFailed = 2, kClosing = 3 };

  // Bytes of encodeRef()'s output.
  static constexpr size_t kEncodedRefBytes = 24;

  // Makes this transport's page (its note: running). Errors: system (no shared memory).
  static Result<std::unique_ptr<ExitNotes>> create(int nranks);
  ExitNotes(const ExitNotes&) = delete;
  ExitNotes& operator=(const ExitNotes&) = delete;
  ~ExitNotes();

  // The page's reference, for the address.
  void encodeRef(std::vector<std::byte>& out) const;
  // Reads kEncodedRefBytes from the front of `in`. Errors: invalid argument (too short).
  static Result<SegmentRef> decodeRef(std::span<const std::byte> in);

  // This transport's note. Thread-safe; a later note never goes back to running, and closing is kept.
  void noteFailed();
  void noteClosing();
  // One more progress pass of this transport. Thread-safe, cheap (one relaxed add to a word of its own).
  void beat();

  // Maps peer `rank`'s page if `owner` is another process of this host (best effort: a page that cannot be
  // mapped leaves the note unknown). Not thread-safe; call before reading notes.
  void attach(int rank, const ProcessIdentity& owner, const SegmentRef& ref);
  // The note peer `rank` left. Thread-safe.
  Note noteOf(int rank) const;
  // Peer `rank`'s heartbeat; 0 where its page is not mapped. Thread-safe.
  uint64_t heartbeatOf(int rank) const;

 private:
  ExitNotes(void* page, int nranks);
  void write(Note note);

  void* page_;                     // this transport's, from allocateSharedSegment
  PeerSegmentMap mappings_;        // the peers' pages, never evicted (one per rank at most)
  std::vector<std::byte*> peers_;  // per rank: its mapped page (only read), or null
};

}  // namespace psdp::transport
