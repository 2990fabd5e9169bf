#include "transport/exit_notes.h"

#include <atomic>
#include <cstring>

#include "base/log.h"

namespace psdp::transport {

namespace {

constexpr size_t kPageBytes = 4096;
// Where the note (uint32) and the heartbeat (uint64) lie in the page: apart, so that beats do not make the
// cache line of the note bounce. Both are read and written with atomic_ref: the page is shared with other
// processes, which see it as plain memory.
constexpr size_t kNoteOffset = 0;
constexpr size_t kHeartbeatOffset = 64;

template <typename T>
std::atomic_ref<T> word(void* page, size_t offset) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(static_cast<std::byte*>(page) + offset));
}

}  // namespace

Result<std::unique_ptr<ExitNotes>> ExitNotes::create(int nranks) {
  PSDP_ASSIGN_OR_RETURN(void* page, allocateSharedSegment(kPageBytes));
  std::unique_ptr<ExitNotes> notes(new ExitNotes(page, nranks));
  notes->write(Note::kRunning);
  return notes;
}

ExitNotes::ExitNotes(void* page, int nranks)
    : page_(page), mappings_(static_cast<size_t>(nranks)), peers_(static_cast<size_t>(nranks), nullptr) {}

ExitNotes::~ExitNotes() {
  (void)freeSharedSegment(page_);
}

void ExitNotes::encodeRef(std::vector<std::byte>& out) const {
  SegmentRef ref = findSharedSegment(page_, kPageBytes).value_or(SegmentRef{});
  const size_t at = out.size();
  out.resize(at + kEncodedRefBytes);
  std::memcpy(out.data() + at, &ref.id, 8);
  std::memcpy(out.data() + at + 8, &ref.bytes, 8);
  std::memcpy(out.data() + at + 16, &ref.fd, 4);
  std::memset(out.data() + at + 20, 0, 4);
}

Result<SegmentRef> ExitNotes::decodeRef(std::span<const std::byte> in) {
  if (in.size() < kEncodedRefBytes) {
    return Status::invalidArgument("exit note reference of {} bytes, expected {}", in.size(), kEncodedRefBytes);
  }
  SegmentRef ref;
  std::memcpy(&ref.id, in.data(), 8);
  std::memcpy(&ref.bytes, in.data() + 8, 8);
  std::memcpy(&ref.fd, in.data() + 16, 4);
  return ref;
}

void ExitNotes::write(Note note) {
  std::atomic_ref<uint32_t> own = word<uint32_t>(page_, kNoteOffset);
  uint32_t seen = own.load(std::memory_order_relaxed);
  // Running -> failed -> closing, never back.
  while (seen < static_cast<uint32_t>(note) &&
         !own.compare_exchange_weak(seen, static_cast<uint32_t>(note), std::memory_order_release)) {
  }
}

void ExitNotes::beat() {
  word<uint64_t>(page_, kHeartbeatOffset).fetch_add(1, std::memory_order_relaxed);
}

void ExitNotes::noteFailed() {
  write(Note::kFailed);
}

void ExitNotes::noteClosing() {
  write(Note::kClosing);
}

void ExitNotes::attach(int rank, const ProcessIdentity& owner, const SegmentRef& ref) {
  if (rank < 0 || static_cast<size_t>(rank) >= peers_.size() || ref.bytes < kPageBytes ||
      !ProcessIdentity::self().isOtherLocalProcess(owner)) {
    return;
  }
  Result<std::byte*> mapped = mappings_.map(owner, ref, kPageBytes);
  if (!mapped.isOk()) {
    processLog().debug("exit note of rank {} not mapped: {}", rank, mapped.status().toString());
    return;
  }
  peers_[static_cast<size_t>(rank)] = mapped.value();
}

ExitNotes::Note ExitNotes::noteOf(int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= peers_.size() || peers_[static_cast<size_t>(rank)] == nullptr) {
    return Note::kUnknown;
  }
  std::byte* page = peers_[static_cast<size_t>(rank)];
  uint32_t note = word<uint32_t>(page, kNoteOffset).load(std::memory_order_acquire);
  return note <= static_cast<uint32_t>(Note::kClosing) ? static_cast<Note>(note) : Note::kUnknown;
}

uint64_t ExitNotes::heartbeatOf(int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= peers_.size() || peers_[static_cast<size_t>(rank)] == nullptr) {
    return 0;
  }
  std::byte* page = peers_[static_cast<size_t>(rank)];
  return word<uint64_t>(page, kHeartbeatOffset).load(std::memory_order_relaxed);
}

}  // namespace psdp::transport
