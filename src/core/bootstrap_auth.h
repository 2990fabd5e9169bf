// How the bootstrap's ends prove to each other that they hold the job secret without ever sending it: both
// sides contribute a fresh nonce, and every frame after the nonces carries an HMAC-SHA-256, keyed with the
// secret, over the protocol version, the frame type, both nonces and a digest of the rest of the frame.
// The root proves itself first, so a client never sends anything derived from the secret to a listener
// that has not shown it holds the secret; the nonces bind every frame to one connection, so a frame
// recorded on another connection (or sent in the other direction) does not verify. OpenSSL's libcrypto
// computes the MACs and the nonces.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/status.h"
#include "core/rendezvous_id.h"

namespace psdp::core::bootstrap {

using Nonce = std::array<uint8_t, 16>;
using Mac = std::array<uint8_t, 32>;
using Digest = std::array<uint8_t, 32>;

// The two nonces of one connection: the root's (sent in its server hello) and the client's (its challenge).
struct SessionNonces {
  Nonce root{};
  Nonce client{};
};

// A fresh random nonce. Errors: system (the random generator failed).
Result<Nonce> freshNonce();

// SHA-256 of `bytes`: what a MAC covers of a frame's body after the MAC, so that a table sent to many ranks
// is hashed once rather than once per rank.
Digest digestOf(std::span<const std::byte> bytes);

// The MAC of a frame of `frame_type` and protocol `version` on the connection of `nonces`, whose body after
// the MAC has digest `rest`. Errors: system (libcrypto failed).
Result<Mac> frameMac(const JobSecret& secret, uint16_t version, uint16_t frame_type, const SessionNonces& nonces,
                     const Digest& rest);

// Whether `mac` is the frame's MAC (frameMac), compared in time that does not depend on where it differs.
// False also when libcrypto fails.
bool frameMacMatches(const Mac& mac, const JobSecret& secret, uint16_t version, uint16_t frame_type,
                     const SessionNonces& nonces, const Digest& rest);

}  // namespace psdp::core::bootstrap
