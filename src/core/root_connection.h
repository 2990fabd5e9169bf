// One accepted connection of the bootstrap root: non-blocking reads of the client's challenge and hello
// frames, and a queue of frames to write. The root's poll loop owns every RootConnection; nothing here
// blocks, and nothing here knows the secret: the root checks what the frames say.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "base/raii.h"
#include "core/bootstrap_protocol.h"

namespace psdp::core {

class RootConnection {
 public:
  enum class State {
    kAwaitChallenge,  // reading the client's nonce; dropped at hello_deadline
    kAwaitHello,      // the root proved itself; reading the hello; dropped at hello_deadline
    kRegistered,      // a rank waiting for the table; any input from it is a protocol violation
    kClosing,         // writing its last frames, then closed
    kDead,            // closed; the root erases it
  };

  // What reading produced.
  struct ReadOutcome {
    enum class Kind { kWaiting, kFrame, kDrop } kind = Kind::kWaiting;
    std::vector<std::byte> body;  // kFrame: the body of the frame the state expects (its header was checked)
    std::string why;              // kDrop: for the log; never holds bytes the peer sent
    bool hostile = false;         // kDrop: the peer broke the protocol (logged at warn), rather than just left
  };

  RootConnection(UniqueFd fd, std::string peer, Deadline hello_deadline);

  // kAwaitChallenge, kAwaitHello: reads what is available; a complete, well-framed frame of the type the
  // state expects comes back as kFrame (the caller checks its contents and moves the state on).
  // kRegistered: any byte or EOF means kDrop.
  ReadOutcome read();
  // Whether the connection is still saying hello (challenge or hello not yet read).
  bool awaitingHello() const { return state == State::kAwaitChallenge || state == State::kAwaitHello; }
  // Writes queued frames until the socket would block. Returns false when the peer is gone (the caller
  // drops the connection). A kClosing connection whose queue empties is closed and becomes kDead.
  bool flush();
  void queue(std::shared_ptr<const bootstrap::Frame> frame) { out_.emplace_back(std::move(frame), 0); }
  bool hasOutput() const { return !out_.empty(); }
  // Closes now.
  void kill();

  // poll() events this connection waits for.
  short pollEvents() const;

  int fd() const { return fd_.get(); }
  const std::string& peer() const { return peer_; }
  State state = State::kAwaitChallenge;
  Deadline hello_deadline;
  bootstrap::SessionNonces nonces;       // the root's from the start, the client's from its challenge
  Deadline give_up = Deadline::never();  // kRegistered: when the client stops waiting for the table
  int rank = -1;                         // kRegistered, and kClosing after it
  std::vector<std::byte> payload;        // kRegistered

 private:
  ReadOutcome readFrameBytes();
  ReadOutcome onHeader();
  ReadOutcome drop(std::string why, bool hostile);

  UniqueFd fd_;
  std::string peer_;
  std::vector<std::byte> in_;  // the frame so far
  size_t have_ = 0;
  size_t need_ = bootstrap::kHeaderBytes;
  bool header_done_ = false;
  std::deque<std::pair<std::shared_ptr<const bootstrap::Frame>, size_t>> out_;  // frame, bytes already sent
};

}  // namespace psdp::core
