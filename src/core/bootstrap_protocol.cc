#include "core/bootstrap_protocol.h"

#include <cstring>

namespace psdp::core::bootstrap {
namespace {

class Writer {
 public:
  explicit Writer(size_t reserve) { out_.reserve(reserve); }
  void put(uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
  }
  void putBytes(std::span<const std::byte> bytes) { out_.insert(out_.end(), bytes.begin(), bytes.end()); }
  void putHeader(FrameType type, uint64_t body_bytes) {
    put(kFrameMagic, 4);
    put(kProtocolVersion, 2);
    put(static_cast<uint16_t>(type), 2);
    put(body_bytes, 8);
  }
  Frame take() { return std::move(out_); }

 private:
  Frame out_;
};

// Reads big-endian fields from a body whose length the header already bounded; every read checks that
// the bytes are there, so a lying length field cannot read past the body.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  bool get(uint64_t& v, int bytes) {
    if (in_.size() - pos_ < static_cast<size_t>(bytes)) return false;
    v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(in_[pos_++]);
    return true;
  }
  std::span<const std::byte> getBytes(size_t n, bool& ok) {
    ok = in_.size() - pos_ >= n;
    if (!ok) return {};
    auto out = in_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  bool atEnd() const { return pos_ == in_.size(); }

 private:
  std::span<const std::byte> in_;
  size_t pos_ = 0;
};

const char* frameName(uint16_t type) {
  switch (static_cast<FrameType>(type)) {
    case FrameType::kServerHello: return "server hello";
    case FrameType::kHello: return "hello";
    case FrameType::kAccepted: return "accepted";
    case FrameType::kTable: return "table";
    case FrameType::kError: return "error";
    case FrameType::kChallenge: return "challenge";
    case FrameType::kRootProof: return "root proof";
  }
  return "unknown";
}

std::string checkCommon(const FrameHeader& header) {
  if (header.magic != kFrameMagic) return fmt::format("bad magic {:#010x}", header.magic);
  if (header.version != kProtocolVersion) {
    return fmt::format("protocol version {}, this psdp speaks {}", header.version, kProtocolVersion);
  }
  return {};
}

bool isKnownError(psdp_status_t code) {
  return code < 0 && code >= PSDP_ERR_ABORTED;
}

Frame encodeNonceFrame(FrameType type, const Nonce& nonce) {
  Writer w(kHeaderBytes + kNonceBytes);
  w.putHeader(type, kNonceBytes);
  w.putBytes(std::as_bytes(std::span(nonce)));
  return w.take();
}

}  // namespace

FrameHeader decodeHeader(std::span<const std::byte, kHeaderBytes> bytes) {
  Reader r(bytes);
  uint64_t magic = 0, version = 0, type = 0;
  FrameHeader h;
  (void)r.get(magic, 4);
  (void)r.get(version, 2);
  (void)r.get(type, 2);
  (void)r.get(h.body_bytes, 8);
  h.magic = static_cast<uint32_t>(magic);
  h.version = static_cast<uint16_t>(version);
  h.type = static_cast<uint16_t>(type);
  return h;
}

std::string checkHeader(const FrameHeader& header, FrameType expected, uint64_t max_body) {
  return checkHeader(header, expected, expected, max_body, max_body);
}

std::string checkHeader(const FrameHeader& header, FrameType a, FrameType b, uint64_t max_body_a, uint64_t max_body_b) {
  std::string common = checkCommon(header);
  if (!common.empty()) return common;
  uint64_t max_body = 0;
  if (header.type == static_cast<uint16_t>(a)) {
    max_body = max_body_a;
  } else if (header.type == static_cast<uint16_t>(b)) {
    max_body = max_body_b;
  } else {
    return fmt::format("unexpected frame type {} ({})", header.type, frameName(header.type));
  }
  if (header.body_bytes > max_body) {
    return fmt::format("{} frame of {} bytes exceeds the limit of {}", frameName(header.type), header.body_bytes,
                       max_body);
  }
  return {};
}

Frame encodeServerHello(const Nonce& root_nonce) {
  return encodeNonceFrame(FrameType::kServerHello, root_nonce);
}

Frame encodeChallenge(const Nonce& client_nonce) {
  return encodeNonceFrame(FrameType::kChallenge, client_nonce);
}

Result<Nonce> decodeNonceBody(std::span<const std::byte> body) {
  Nonce nonce{};
  if (body.size() != nonce.size()) {
    return Status::invalidArgument("nonce frame of {} bytes, expected {}", body.size(), nonce.size());
  }
  std::memcpy(nonce.data(), body.data(), nonce.size());
  return nonce;
}

std::vector<std::byte> encodeHelloRest(const Hello& hello) {
  Writer w(kHelloFixedBytes + hello.payload.size());
  w.put(hello.rank, 4);
  w.put(hello.nranks, 4);
  w.put(hello.wait_ms, 4);
  w.put(hello.payload.size(), 4);
  w.putBytes(hello.payload);
  return w.take();
}

std::vector<std::byte> encodeTableRest(const Table& table) {
  uint64_t bytes = 4;
  for (const auto& payload : table) bytes += 4 + payload.size();
  Writer w(bytes);
  w.put(table.size(), 4);
  for (const auto& payload : table) {
    w.put(payload.size(), 4);
    w.putBytes(payload);
  }
  return w.take();
}

std::vector<std::byte> encodeErrorRest(const Status& status) {
  std::string_view message = status.message();
  message = message.substr(0, kMaxErrorMessageBytes);
  Writer w(8 + message.size());
  w.put(static_cast<uint32_t>(static_cast<int32_t>(status.code())), 4);
  w.put(message.size(), 4);
  w.putBytes(std::as_bytes(std::span(message)));
  return w.take();
}

Result<Frame> encodeSealedHead(FrameType type, const JobSecret& secret, const SessionNonces& nonces,
                               const Digest& rest_digest, uint64_t rest_bytes) {
  PSDP_ASSIGN_OR_RETURN(Mac mac, frameMac(secret, kProtocolVersion, static_cast<uint16_t>(type), nonces, rest_digest));
  Writer w(kHeaderBytes + kMacBytes);
  w.putHeader(type, kMacBytes + rest_bytes);
  w.putBytes(std::as_bytes(std::span(mac)));
  return w.take();
}

Result<Frame> encodeSealed(FrameType type, const JobSecret& secret, const SessionNonces& nonces,
                           std::span<const std::byte> rest) {
  PSDP_ASSIGN_OR_RETURN(Frame frame, encodeSealedHead(type, secret, nonces, digestOf(rest), rest.size()));
  frame.insert(frame.end(), rest.begin(), rest.end());
  return frame;
}

Result<std::span<const std::byte>> openSealed(FrameType type, std::span<const std::byte> body, const JobSecret& secret,
                                              const SessionNonces& nonces) {
  if (body.size() < kMacBytes) {
    return Status::invalidArgument("{} frame of {} bytes is shorter than its MAC",
                                   frameName(static_cast<uint16_t>(type)), body.size());
  }
  Mac mac{};
  std::memcpy(mac.data(), body.data(), mac.size());
  std::span<const std::byte> rest = body.subspan(kMacBytes);
  if (!frameMacMatches(mac, secret, kProtocolVersion, static_cast<uint16_t>(type), nonces, digestOf(rest))) {
    return Status::mismatch("the {} frame's MAC does not verify", frameName(static_cast<uint16_t>(type)));
  }
  return rest;
}

Result<Hello> decodeHelloRest(std::span<const std::byte> rest) {
  Reader r(rest);
  Hello hello;
  uint64_t rank = 0, nranks = 0, wait_ms = 0, payload_bytes = 0;
  if (!r.get(rank, 4) || !r.get(nranks, 4) || !r.get(wait_ms, 4) || !r.get(payload_bytes, 4)) {
    return Status::invalidArgument("hello of {} bytes is shorter than its fixed part", rest.size());
  }
  bool ok = false;
  auto payload = r.getBytes(payload_bytes, ok);
  if (!ok || !r.atEnd()) {
    return Status::invalidArgument("hello payload length {} does not match its frame ({} bytes)", payload_bytes,
                                   rest.size());
  }
  hello.rank = static_cast<uint32_t>(rank);
  hello.nranks = static_cast<uint32_t>(nranks);
  hello.wait_ms = static_cast<uint32_t>(wait_ms);
  hello.payload.assign(payload.begin(), payload.end());
  return hello;
}

Result<Table> decodeTableRest(std::span<const std::byte> rest, int nranks) {
  Reader r(rest);
  uint64_t count = 0;
  if (!r.get(count, 4) || count != static_cast<uint64_t>(nranks)) {
    return Status::invalidArgument("table holds {} ranks, expected {}", count, nranks);
  }
  Table table(static_cast<size_t>(nranks));
  for (auto& payload : table) {
    uint64_t bytes = 0;
    bool ok = r.get(bytes, 4) && bytes <= kMaxPayloadBytes;
    auto data = ok ? r.getBytes(bytes, ok) : std::span<const std::byte>();
    if (!ok) return Status::invalidArgument("table entry is truncated or exceeds {} bytes", kMaxPayloadBytes);
    payload.assign(data.begin(), data.end());
  }
  if (!r.atEnd()) return Status::invalidArgument("table has trailing bytes");
  return table;
}

std::string escapePeerText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte == '\\') {
      out += "\\\\";
    } else if (byte == '\n') {
      out += "\\n";
    } else if (byte < 0x20 || byte >= 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += ch;
    }
  }
  return out;
}

Status decodeErrorRest(std::span<const std::byte> rest) {
  Reader r(rest);
  uint64_t code = 0, length = 0;
  bool ok = r.get(code, 4) && r.get(length, 4);
  auto text = ok ? r.getBytes(length, ok) : std::span<const std::byte>();
  if (!ok || !r.atEnd()) return Status::remote("the bootstrap root sent a malformed error frame");
  const std::string message = escapePeerText(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()));
  auto status = static_cast<psdp_status_t>(static_cast<int32_t>(static_cast<uint32_t>(code)));
  if (!isKnownError(status)) return Status::remote("{}", message);
  return Status::make(status, "{}", message);
}

uint64_t maxTableBodyBytes(int nranks) {
  return kMacBytes + 4 + static_cast<uint64_t>(nranks) * (4 + kMaxPayloadBytes);
}

std::string formatRanks(const std::vector<int>& sorted_ranks, size_t max_ranges) {
  std::string out;
  size_t ranges = 0;
  for (size_t i = 0; i < sorted_ranks.size();) {
    size_t j = i;
    while (j + 1 < sorted_ranks.size() && sorted_ranks[j + 1] == sorted_ranks[j] + 1) ++j;
    if (ranges == max_ranges) return out + ", ...";
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", sorted_ranks[i]) : fmt::format("{}-{}", sorted_ranks[i], sorted_ranks[j]);
    ++ranges;
    i = j + 1;
  }
  return out;
}

}  // namespace psdp::core::bootstrap
