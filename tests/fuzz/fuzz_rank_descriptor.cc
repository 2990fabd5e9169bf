// A rank's placement descriptor, which every rank decodes from every other rank's rendezvous payload.
// Whatever decodes re-encodes to a descriptor that decodes again.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_check.h"
#include "topo/rank_descriptor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto descriptor = psdp::topo::decodeDescriptor(std::as_bytes(std::span(data, size)));
  if (descriptor.isOk()) {
    const std::vector<std::byte> encoded = psdp::topo::encodeDescriptor(descriptor.value());
    auto again = psdp::topo::decodeDescriptor(encoded);
    PSDP_FUZZ_CHECK(again.isOk());
    PSDP_FUZZ_CHECK(psdp::topo::encodeDescriptor(again.value()) == encoded);
  }
  return 0;
}
