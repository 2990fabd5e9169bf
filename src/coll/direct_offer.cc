#include "coll/direct_offer.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace psdp::coll {
namespace {

// "PSDO" and a layout version.
constexpr uint32_t kMagic = 0x4f445350;
constexpr uint32_t kVersion = 1;
constexpr size_t kBufferBytes = 48;
constexpr size_t kHeaderBytes = 8;

static_assert(kHeaderBytes + transport::ProcessIdentity::kEncodedBytes + 2 * kBufferBytes + 4 <= kDirectOfferBytes);

class Writer {
 public:
  explicit Writer(DirectOfferBytes& out) : out_(out) {}
  template <typename T>
  void put(const T& value) {
    std::memcpy(out_.data() + at_, &value, sizeof(T));
    at_ += sizeof(T);
  }
  void put(std::span<const std::byte> bytes) {
    std::memcpy(out_.data() + at_, bytes.data(), bytes.size());
    at_ += bytes.size();
  }

 private:
  DirectOfferBytes& out_;
  size_t at_ = 0;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  template <typename T>
  T get() {
    T value;
    std::memcpy(&value, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::span<const std::byte> rest() const { return in_.subspan(at_); }
  void skip(size_t bytes) { at_ += bytes; }

 private:
  std::span<const std::byte> in_;
  size_t at_ = 0;
};

void putBuffer(Writer& w, const BufferOffer& b) {
  w.put(b.address);
  w.put(b.bytes);
  w.put(static_cast<uint32_t>(b.in_segment ? 1 : 0));
  w.put(b.segment.fd);
  w.put(b.segment.id);
  w.put(b.segment.bytes);
  w.put(b.segment.offset);
}

BufferOffer getBuffer(Reader& r) {
  BufferOffer b;
  b.address = r.get<uint64_t>();
  b.bytes = r.get<uint64_t>();
  b.in_segment = r.get<uint32_t>() != 0;
  b.segment.fd = r.get<int32_t>();
  b.segment.id = r.get<uint64_t>();
  b.segment.bytes = r.get<uint64_t>();
  b.segment.offset = r.get<uint64_t>();
  return b;
}

}  // namespace

// Only with the namespace and boot known: two containers' pid 1 must not pass for one process.
bool sameProcess(const transport::ProcessIdentity& a, const transport::ProcessIdentity& b) {
  static constexpr std::array<uint8_t, 16> kUnknown{};
  return a.pid == b.pid && a.pid_namespace != 0 && a.pid_namespace == b.pid_namespace && a.boot_id != kUnknown &&
         a.boot_id == b.boot_id;
}

BufferOffer BufferOffer::of(const void* ptr, size_t bytes) {
  BufferOffer offer;
  offer.address = reinterpret_cast<uintptr_t>(ptr);
  offer.bytes = bytes;
  // Nothing of an empty range is ever touched: it needs no segment.
  if (bytes == 0) {
    offer.in_segment = true;
    return offer;
  }
  if (std::optional<transport::SegmentRef> segment = transport::findSharedSegment(ptr, bytes)) {
    offer.in_segment = true;
    offer.segment = *segment;
  }
  return offer;
}

DirectOfferBytes encodeDirectOffer(const DirectOffer& offer) {
  DirectOfferBytes out{};
  Writer w(out);
  w.put(kMagic);
  w.put(kVersion);
  std::array<std::byte, transport::ProcessIdentity::kEncodedBytes> encoded;
  offer.process.encode(encoded);
  w.put(std::span<const std::byte>(encoded));
  putBuffer(w, offer.send);
  putBuffer(w, offer.recv);
  w.put(static_cast<uint32_t>(offer.cma));
  return out;
}

Result<DirectOffer> decodeDirectOffer(std::span<const std::byte> bytes) {
  if (bytes.size() != kDirectOfferBytes) {
    return Status::mismatch("a message of {} bytes where a direct offer ({} bytes) was expected", bytes.size(),
                            kDirectOfferBytes);
  }
  Reader r(bytes);
  if (r.get<uint32_t>() != kMagic || r.get<uint32_t>() != kVersion) {
    return Status::mismatch("a message that is not a direct offer where one was expected");
  }
  DirectOffer offer;
  Result<transport::ProcessIdentity> process = transport::ProcessIdentity::decode(r.rest());
  if (!process.isOk()) return Status::mismatch("direct offer: {}", process.status().message());
  offer.process = process.value();
  r.skip(transport::ProcessIdentity::kEncodedBytes);
  offer.send = getBuffer(r);
  offer.recv = getBuffer(r);
  uint32_t cma = r.get<uint32_t>();
  if (cma > static_cast<uint32_t>(CmaReach::kYes)) return Status::mismatch("direct offer: CMA reach {}", cma);
  offer.cma = static_cast<CmaReach>(cma);
  return offer;
}

bool mapsSegments(const DirectOffer& from, const DirectOffer& to) {
  return from.process.isOtherLocalProcess(to.process) && to.send.in_segment && to.recv.in_segment;
}

bool canReach(const DirectOffer& from, const DirectOffer& to) {
  if (sameProcess(from.process, to.process) || mapsSegments(from, to)) return true;
  return from.process.isOtherLocalProcess(to.process) && from.cma == CmaReach::kYes;
}

bool needsCma(std::span<const DirectOffer> offers) {
  for (size_t i = 0; i < offers.size(); ++i) {
    for (size_t j = 0; j < offers.size(); ++j) {
      if (i != j && !sameProcess(offers[i].process, offers[j].process) && !mapsSegments(offers[i], offers[j])) {
        return true;
      }
    }
  }
  return false;
}

bool cmaUndecided(std::span<const DirectOffer> offers) {
  return std::any_of(offers.begin(), offers.end(), [](const DirectOffer& o) { return o.cma == CmaReach::kUnknown; });
}

bool directReachable(std::span<const DirectOffer> offers) {
  for (size_t i = 0; i < offers.size(); ++i) {
    for (size_t j = 0; j < offers.size(); ++j) {
      if (i != j && !canReach(offers[i], offers[j])) return false;
    }
  }
  return true;
}

}  // namespace psdp::coll
