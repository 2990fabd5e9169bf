// Rendezvous ids from text (PSDP_UNIQUE_ID, a user's psdp_unique_id_from_string) and from the opaque
// struct (bytes a caller passes in). Whatever parses prints back to the same id.
#include <psdp/psdp.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/rendezvous_id.h"
#include "fuzz_check.h"

using psdp::core::RendezvousId;

namespace {

bool sameId(const RendezvousId& a, const RendezvousId& b) {
  return a.host == b.host && a.port == b.port && a.secret == b.secret;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto from_text = RendezvousId::fromString(std::string_view(reinterpret_cast<const char*>(data), size));
  if (from_text.isOk()) {
    auto again = RendezvousId::fromString(from_text.value().toString());
    PSDP_FUZZ_CHECK(again.isOk() && sameId(again.value(), from_text.value()));
  }
  psdp_unique_id_t id;
  std::memset(&id, 0, sizeof(id));
  std::memcpy(&id, data, std::min(size, sizeof(id)));
  auto from_struct = RendezvousId::fromUniqueId(id);
  if (from_struct.isOk()) {
    psdp_unique_id_t back;
    from_struct.value().toUniqueId(&back);
    auto again = RendezvousId::fromUniqueId(back);
    PSDP_FUZZ_CHECK(again.isOk() && sameId(again.value(), from_struct.value()));
  }
  return 0;
}
