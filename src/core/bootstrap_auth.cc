#include "core/bootstrap_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>

namespace psdp::core::bootstrap {
namespace {

// Separates these MACs from any other use of the same secret.
constexpr char kDomain[] = "psdp bootstrap frame";

}  // namespace

Result<Nonce> freshNonce() {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    return Status::system("the random generator (OpenSSL RAND_bytes) failed to make a bootstrap nonce");
  }
  return nonce;
}

Digest digestOf(std::span<const std::byte> bytes) {
  Digest digest{};
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest.data());
  return digest;
}

Result<Mac> frameMac(const JobSecret& secret, uint16_t version, uint16_t frame_type, const SessionNonces& nonces,
                     const Digest& rest) {
  // Every field has a fixed size, so the concatenation is unambiguous.
  std::array<uint8_t, sizeof(kDomain) + 4 + 2 * sizeof(Nonce) + sizeof(Digest)> message{};
  uint8_t* out = message.data();
  out = std::copy(std::begin(kDomain), std::end(kDomain), out);
  *out++ = static_cast<uint8_t>(version >> 8);
  *out++ = static_cast<uint8_t>(version);
  *out++ = static_cast<uint8_t>(frame_type >> 8);
  *out++ = static_cast<uint8_t>(frame_type);
  out = std::copy(nonces.root.begin(), nonces.root.end(), out);
  out = std::copy(nonces.client.begin(), nonces.client.end(), out);
  std::copy(rest.begin(), rest.end(), out);
  Mac mac{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), message.data(), message.size(), mac.data(),
           &length) == nullptr ||
      length != mac.size()) {
    return Status::system("OpenSSL HMAC-SHA-256 failed to authenticate a bootstrap frame");
  }
  return mac;
}

bool frameMacMatches(const Mac& mac, const JobSecret& secret, uint16_t version, uint16_t frame_type,
                     const SessionNonces& nonces, const Digest& rest) {
  Result<Mac> expected = frameMac(secret, version, frame_type, nonces, rest);
  return expected.isOk() && CRYPTO_memcmp(expected.value().data(), mac.data(), mac.size()) == 0;
}

}  // namespace psdp::core::bootstrap
