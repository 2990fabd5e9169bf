#include "core/root_connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace psdp::core {

using bootstrap::FrameType;

RootConnection::RootConnection(UniqueFd fd, std::string peer, Deadline hello_deadline)
    : hello_deadline(hello_deadline), fd_(std::move(fd)), peer_(std::move(peer)) {}

RootConnection::ReadOutcome RootConnection::drop(std::string why, bool hostile) {
  ReadOutcome out;
  out.kind = ReadOutcome::Kind::kDrop;
  out.why = std::move(why);
  out.hostile = hostile;
  return out;
}

RootConnection::ReadOutcome RootConnection::read() {
  if (awaitingHello()) return readFrameBytes();
  if (state != State::kRegistered) return {};
  std::byte byte{};
  ssize_t n = ::recv(fd_.get(), &byte, 1, 0);
  if (n == 0) return drop("closed the connection before the table", false);
  if (n > 0) return drop("sent bytes after its hello", true);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return {};
  return drop(fmt::format("connection failed: {}", std::strerror(errno)), false);
}

// Reads exactly up to the end of the current part (header, then body), never beyond: a client sends
// nothing after its hello, nor before the root answered its challenge, and whatever it does send must
// not be mistaken for part of a frame.
RootConnection::ReadOutcome RootConnection::readFrameBytes() {
  const char* what = state == State::kAwaitChallenge ? "challenge" : "hello";
  for (;;) {
    if (in_.size() < need_) in_.resize(need_);
    ssize_t n = ::recv(fd_.get(), in_.data() + have_, need_ - have_, 0);
    if (n == 0) {
      // Closing after the root's proof is what a rank of another job does on finding the wrong root.
      return drop(have_ == 0 ? fmt::format("closed without a {}", what)
                             : fmt::format("closed after {} bytes of a {}", have_, what),
                  have_ != 0);
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
      return drop(fmt::format("connection failed: {}", std::strerror(errno)), false);
    }
    have_ += static_cast<size_t>(n);
    if (have_ < need_) continue;
    if (!header_done_) {
      ReadOutcome header = onHeader();
      if (header.kind == ReadOutcome::Kind::kDrop) return header;
      if (have_ < need_) continue;
    }
    ReadOutcome out;
    out.kind = ReadOutcome::Kind::kFrame;
    out.body.assign(in_.begin() + static_cast<ptrdiff_t>(bootstrap::kHeaderBytes),
                    in_.begin() + static_cast<ptrdiff_t>(need_));
    std::vector<std::byte>().swap(in_);
    have_ = 0;
    need_ = bootstrap::kHeaderBytes;
    header_done_ = false;
    return out;
  }
}

RootConnection::ReadOutcome RootConnection::onHeader() {
  auto header =
      bootstrap::decodeHeader(std::span<const std::byte, bootstrap::kHeaderBytes>(in_.data(), bootstrap::kHeaderBytes));
  std::string bad = state == State::kAwaitChallenge
                        ? bootstrap::checkHeader(header, FrameType::kChallenge, bootstrap::kNonceBytes)
                        : bootstrap::checkHeader(header, FrameType::kHello, bootstrap::kMaxHelloBodyBytes);
  if (!bad.empty()) return drop(std::move(bad), true);
  header_done_ = true;
  need_ = bootstrap::kHeaderBytes + header.body_bytes;
  return {};
}

bool RootConnection::flush() {
  while (!out_.empty()) {
    auto& [frame, sent] = out_.front();
    ssize_t n = ::send(fd_.get(), frame->data() + sent, frame->size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      return false;
    }
    sent += static_cast<size_t>(n);
    if (sent == frame->size()) out_.pop_front();
  }
  // Closing right after the last write is safe: the client sent nothing after its hello, so no unread
  // input makes the kernel reset the connection and discard the frames still in flight.
  if (state == State::kClosing) kill();
  return true;
}

void RootConnection::kill() {
  fd_.reset();
  out_.clear();
  state = State::kDead;
}

short RootConnection::pollEvents() const {
  short events = 0;
  if (awaitingHello() || state == State::kRegistered) events |= POLLIN;
  if (!out_.empty()) events |= POLLOUT;
  return events;
}

}  // namespace psdp::core
