// The bootstrap's frame parsers, on bytes from anyone who can connect to a root or answer a rank. The first
// byte picks the parser; the rest is its input. Beyond "no crash", each decoder must be exact: whatever it
// accepts re-encodes to the very bytes it was given, and a sealed frame opens only unaltered.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <vector>

#include "core/bootstrap_protocol.h"
#include "fuzz_check.h"

namespace {

using namespace psdp::core;
using namespace psdp::core::bootstrap;

bool sameBytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

constexpr FrameType kTypes[] = {FrameType::kServerHello, FrameType::kHello,     FrameType::kAccepted, FrameType::kTable,
                                FrameType::kError,       FrameType::kChallenge, FrameType::kRootProof};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  const auto input = std::as_bytes(std::span(data + 1, size - 1));
  switch (selector % 6) {
    case 0: {  // headers, against every frame type and limit
      if (input.size() < kHeaderBytes) return 0;
      const FrameHeader header = decodeHeader(input.first<kHeaderBytes>());
      for (FrameType type : kTypes) {
        const std::string why = checkHeader(header, type, kMaxHelloBodyBytes);
        PSDP_FUZZ_CHECK(why.empty() ==
                        (header.magic == kFrameMagic && header.version == kProtocolVersion &&
                         header.type == static_cast<uint16_t>(type) && header.body_bytes <= kMaxHelloBodyBytes));
      }
      return 0;
    }
    case 1: {  // hellos
      auto hello = decodeHelloRest(input);
      if (hello.isOk()) PSDP_FUZZ_CHECK(sameBytes(encodeHelloRest(hello.value()), input));
      return 0;
    }
    case 2: {  // tables, for the rank count the next byte gives
      if (input.empty()) return 0;
      auto table = decodeTableRest(input.subspan(1), static_cast<int>(input[0]));
      if (table.isOk()) PSDP_FUZZ_CHECK(sameBytes(encodeTableRest(table.value()), input.subspan(1)));
      return 0;
    }
    case 3: {  // error frames: never success, and the message never carries a control byte
      const psdp::Status status = decodeErrorRest(input);
      PSDP_FUZZ_CHECK(!status.isOk());
      for (char ch : status.message()) PSDP_FUZZ_CHECK(ch >= 0x20 && ch < 0x7f);
      return 0;
    }
    case 4: {  // nonces
      auto nonce = decodeNonceBody(input);
      PSDP_FUZZ_CHECK(nonce.isOk() == (input.size() == kNonceBytes));
      return 0;
    }
    default: {  // sealing: a frame opens with its own secret and nonces, and not once a byte is altered
      const JobSecret secret{1, 2, 3};
      const SessionNonces nonces{{4, 5}, {6, 7}};
      const FrameType type = kTypes[(selector / 6) % std::size(kTypes)];
      auto opened_as_is = openSealed(type, input, secret, nonces);
      if (opened_as_is.isOk()) return 0;  // a forged MAC that verifies: impossible in practice
      auto sealed = encodeSealed(type, secret, nonces, input);
      PSDP_FUZZ_CHECK(sealed.isOk());
      const auto body = std::span<const std::byte>(sealed.value()).subspan(kHeaderBytes);
      auto opened = openSealed(type, body, secret, nonces);
      PSDP_FUZZ_CHECK(opened.isOk() && sameBytes(opened.value(), input));
      if (!input.empty()) {
        std::vector<std::byte> altered(body.begin(), body.end());
        altered[static_cast<size_t>(input[0]) % altered.size()] ^= std::byte{0x80};
        PSDP_FUZZ_CHECK(!openSealed(type, altered, secret, nonces).isOk());
      }
      return 0;
    }
  }
}
