// The TCP bootstrap over real loopback sockets, ranks as threads. Every wait is bounded by a deadline, and
// no test sleeps to synchronise: ordering comes from the protocol (e.g. a raw client reads "accepted").
#include "core/bootstrap.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/sinks/ringbuffer_sink.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <latch>
#include <thread>

#include "base/log.h"
#include "core/bootstrap_protocol.h"
#include "core/net_address.h"
#include "unit/core/bootstrap_test_util.h"

namespace psdp::core {
namespace {

using testing::jobOf;
using testing::listenersOn;
using testing::loopbackConfig;
using testing::payloadFor;
using testing::RankSpec;
using testing::RawClient;
using testing::runRanks;
using testing::Table;
using Clock = std::chrono::steady_clock;

JobSecret secretOf(uint8_t seed) {
  JobSecret s{};
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(seed + i * 3);
  return s;
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::unique_ptr<RootServer> startRoot(const JobSecret& secret, double deadline_s = 10,
                                      const Config& config = loopbackConfig()) {
  auto root = RootServer::start("127.0.0.1", 0, secret, config, Deadline::after(deadline_s));
  EXPECT_TRUE(root.isOk()) << root.status().toString();
  return root.isOk() ? std::move(root).value() : nullptr;
}

void expectFullTable(const Result<Table>& result, int nranks, size_t who) {
  ASSERT_TRUE(result.isOk()) << "rank thread " << who << ": " << result.status().toString();
  ASSERT_EQ(result.value().size(), static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(result.value()[static_cast<size_t>(r)], payloadFor(r)) << "rank " << r;
}

void expectError(const Result<Table>& result, psdp_status_t code, std::initializer_list<const char*> words) {
  ASSERT_FALSE(result.isOk());
  EXPECT_EQ(result.status().code(), code) << result.status().toString();
  for (const char* w : words) {
    EXPECT_NE(result.status().message().find(w), std::string::npos) << result.status().message();
  }
}

// A raw client registered as `rank` of `nranks` (its "accepted" read).
RawClient registeredClient(uint16_t port, const JobSecret& secret, int rank, int nranks) {
  auto c = RawClient::connect(port);
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  if (!c.isOk()) return RawClient();
  EXPECT_TRUE(c.value().handshake(secret).isOk());
  EXPECT_TRUE(c.value().sendHello(secret, rank, nranks, payloadFor(rank)).isOk());
  auto accepted = c.value().readFrameType();
  EXPECT_TRUE(accepted.isOk()) << accepted.status().toString();
  if (accepted.isOk()) {
    EXPECT_EQ(accepted.value(), static_cast<uint16_t>(bootstrap::FrameType::kAccepted));
  }
  return std::move(c).value();
}

// Collects what loggers write, at warn and above, while it lives.
class WarningCapture {
 public:
  WarningCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)) {
    sink_->set_level(spdlog::level::warn);
  }
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink() const { return sink_; }
  size_t count(std::string_view needle) const {
    size_t n = 0;
    for (const std::string& line : sink_->last_formatted()) n += line.find(needle) != std::string::npos ? 1 : 0;
    return n;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

class RendezvousSizeTest : public ::testing::TestWithParam<int> {};

TEST_P(RendezvousSizeTest, EveryRankGetsEveryPayload) {
  const int n = GetParam();
  auto root = startRoot(secretOf(1));
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->id().host, "127.0.0.1");
  auto start = Clock::now();
  auto results = runRanks("127.0.0.1", root->id().port, jobOf(n, secretOf(1)), loopbackConfig(), 10);
  for (size_t i = 0; i < results.size(); ++i) expectFullTable(results[i], n, i);
  EXPECT_LT(secondsSince(start), 3.0);
}

INSTANTIATE_TEST_SUITE_P(Sizes, RendezvousSizeTest, ::testing::Values(1, 2, 3, 7));

// Clients given port 0 scan the range, skip a listener that never speaks, skip another job's root (which
// drops their hello), and find theirs.
TEST(BootstrapTest, PortRangeScanFindsTheRootWithOurSecret) {
  auto silent_addr = SockAddr::numeric("127.0.0.1", 0);
  ASSERT_TRUE(silent_addr.isOk());
  auto silent = listenOn(silent_addr.value());
  ASSERT_TRUE(silent.isOk()) << silent.status().toString();
  auto silent_port = localAddress(silent.value().get());
  ASSERT_TRUE(silent_port.isOk());
  int lo = silent_port.value().port();
  Config config = loopbackConfig();
  config.port_range = PortRange{lo + 1, lo + 16};
  auto other_job = startRoot(secretOf(2), 10, config);
  auto ours = startRoot(secretOf(3), 10, config);
  ASSERT_TRUE(other_job && ours);
  EXPECT_LT(other_job->id().port, ours->id().port);
  config.port_range.lo = lo;  // clients also scan the silent listener's port
  auto start = Clock::now();
  auto results = runRanks("127.0.0.1", 0, jobOf(3, secretOf(3)), config, 10);
  for (size_t i = 0; i < results.size(); ++i) expectFullTable(results[i], 3, i);
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_FALSE(other_job->finished());
}

TEST(BootstrapTest, NranksMismatchFailsEveryRank) {
  auto root = startRoot(secretOf(4));
  ASSERT_NE(root, nullptr);
  std::vector<RankSpec> specs = {{0, 3, secretOf(4), 0}, {1, 3, secretOf(4), 0}, {2, 4, secretOf(4), 0}};
  auto start = Clock::now();
  auto results = runRanks("127.0.0.1", root->id().port, specs, loopbackConfig(), 10);
  for (const auto& r : results) expectError(r, PSDP_ERR_MISMATCH, {"nranks 3", "nranks 4", "127.0.0.1:"});
  EXPECT_LT(secondsSince(start), 3.0);
}

TEST(BootstrapTest, DuplicateRankFailsEveryRank) {
  auto root = startRoot(secretOf(5));
  ASSERT_NE(root, nullptr);
  std::vector<RankSpec> specs = {{0, 3, secretOf(5), 0}, {0, 3, secretOf(5), 0}, {1, 3, secretOf(5), 0}};
  auto start = Clock::now();
  auto results = runRanks("127.0.0.1", root->id().port, specs, loopbackConfig(), 10);
  for (const auto& r : results) expectError(r, PSDP_ERR_MISMATCH, {"rank 0 was claimed by two processes"});
  EXPECT_LT(secondsSince(start), 3.0);
}

// A client with the wrong secret, claiming a real rank while the real ranks are mid-rendezvous, takes no
// rank: a psdp rank stops at the root's proof, and a hostile client that ignores the proof and seals a
// hello anyway is dropped and logged at warning level. Rank 0 registers by hand first, so the order is
// fixed by the protocol.
TEST(BootstrapTest, WrongSecretIsDroppedAndRealRanksSucceed) {
  auto root = startRoot(secretOf(6));
  ASSERT_NE(root, nullptr);
  RawClient rank0 = registeredClient(root->id().port, secretOf(6), 0, 2);

  auto intruder = runRanks("127.0.0.1", root->id().port, {{1, 2, secretOf(7), 0}}, loopbackConfig(), 10);
  expectError(intruder[0], PSDP_ERR_MISMATCH, {"could not prove it holds our job secret", "told nothing"});
  auto forger = RawClient::connect(root->id().port);
  ASSERT_TRUE(forger.isOk());
  EXPECT_EQ(forger.value().handshake(secretOf(7)).code(), PSDP_ERR_MISMATCH);
  ASSERT_TRUE(forger.value().sendHello(secretOf(7), 1, 2, payloadFor(1)).isOk());
  EXPECT_TRUE(forger.value().closedWithin(3));
  auto rank1 = runRanks("127.0.0.1", root->id().port, {{1, 2, secretOf(6), 0}}, loopbackConfig(), 10);
  expectFullTable(rank1[0], 2, 1);
  auto table = rank0.readFrameType();
  ASSERT_TRUE(table.isOk()) << table.status().toString();
  EXPECT_EQ(table.value(), static_cast<uint16_t>(bootstrap::FrameType::kTable));
}

// Peers that break the protocol in every way we know, connected before and during a real rendezvous:
// the ranks still finish well within the 5 s a stalled peer is allowed.
TEST(BootstrapTest, HostileClientsDoNotDisturbARealRendezvous) {
  auto root = startRoot(secretOf(8));
  ASSERT_NE(root, nullptr);
  uint16_t port = root->id().port;
  bootstrap::Frame good = bootstrap::encodeChallenge(bootstrap::Nonce{});
  auto mutate = [&](size_t at, std::byte value) {
    bootstrap::Frame f = good;
    f[at] = value;
    return f;
  };
  bootstrap::Frame oversized = good;
  oversized[8] = std::byte{0x01};  // body of 2^56 bytes
  // In place of the challenge.
  std::vector<bootstrap::Frame> dropped_at_once = {
      bootstrap::Frame(64, std::byte{0x5a}),  // garbage
      mutate(0, std::byte{0x00}),             // wrong magic
      mutate(5, std::byte{0x09}),             // wrong version
      mutate(7, std::byte{0x04}),             // a table where a challenge belongs
      mutate(7, std::byte{0x02}),             // a hello before the challenge
      oversized,
      bootstrap::Frame(good.begin(), good.begin() + 20),  // truncated challenge, then close (below)
  };
  std::vector<RawClient> hostile;
  for (const auto& frame : dropped_at_once) {
    auto c = RawClient::connect(port);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    ASSERT_TRUE(c.value().send(frame).isOk());
    hostile.push_back(std::move(c).value());
  }
  // In place of the hello, after an honest handshake: lengths that disagree (sealed with the secret), a
  // hello over the size limit, and one whose MAC is cut short.
  bootstrap::Hello hello;
  hello.rank = 0;
  hello.nranks = 4;
  std::vector<std::byte> inconsistent = bootstrap::encodeHelloRest(hello);
  inconsistent[15] = std::byte{0x7f};  // payload length disagrees with the frame
  for (int kind = 0; kind < 3; ++kind) {
    auto c = RawClient::connect(port);
    ASSERT_TRUE(c.isOk());
    ASSERT_TRUE(c.value().handshake(secretOf(8)).isOk());
    auto sealed = bootstrap::encodeSealed(bootstrap::FrameType::kHello, secretOf(8), c.value().nonces(), inconsistent);
    ASSERT_TRUE(sealed.isOk());
    bootstrap::Frame frame = sealed.value();
    if (kind == 1) frame[8] = std::byte{0x01};  // body of 2^56 bytes
    if (kind == 2) {                            // a body of 8 bytes, shorter than a MAC
      frame.resize(bootstrap::kHeaderBytes + 8);
      std::fill(frame.begin() + 8, frame.begin() + 15, std::byte{0});
      frame[15] = std::byte{8};
    }
    ASSERT_TRUE(c.value().send(frame).isOk());
    hostile.insert(hostile.end() - 1, std::move(c).value());
  }
  auto loris = RawClient::connect(port);    // sends nothing
  auto trickle = RawClient::connect(port);  // half a header, then nothing
  ASSERT_TRUE(loris.isOk() && trickle.isOk());
  ASSERT_TRUE(trickle.value().send(std::span(good).first(5)).isOk());
  hostile.back() = RawClient();  // the truncated one closes
  auto start = Clock::now();
  auto results = runRanks("127.0.0.1", port, jobOf(4, secretOf(8)), loopbackConfig(), 10);
  for (size_t i = 0; i < results.size(); ++i) expectFullTable(results[i], 4, i);
  EXPECT_LT(secondsSince(start), 3.0);
  for (size_t i = 0; i + 1 < hostile.size(); ++i) EXPECT_TRUE(hostile[i].closedWithin(3)) << "hostile client " << i;
  // The rendezvous is over: the root lets go of the stalled peers too.
  EXPECT_TRUE(loris.value().closedWithin(3));
  EXPECT_TRUE(trickle.value().closedWithin(3));
}

// A flood of one kind of hostile peer can neither flood the log nor silence another kind: after 20
// protocol violations, a wrong secret is still a warning, the violations beyond the burst are counted, and
// the root's summary mentions them when it ends.
TEST(BootstrapTest, DropWarningsAreLimitedPerKindAndSummarised) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
  processLog().sinks().push_back(sink);
  const spdlog::level::level_enum level = processLog().level();
  processLog().set_level(spdlog::level::warn);
  {
    auto root = startRoot(secretOf(11));
    ASSERT_NE(root, nullptr);
    for (int i = 0; i < 20; ++i) {
      auto c = RawClient::connect(root->id().port);
      ASSERT_TRUE(c.isOk());
      ASSERT_TRUE(c.value().send(bootstrap::Frame(64, std::byte{0x5a})).isOk());
      EXPECT_TRUE(c.value().closedWithin(3)) << "garbage client " << i;
    }
    auto intruder = RawClient::connect(root->id().port);
    ASSERT_TRUE(intruder.isOk());
    EXPECT_EQ(intruder.value().handshake(secretOf(12)).code(), PSDP_ERR_MISMATCH);
    ASSERT_TRUE(intruder.value().sendHello(secretOf(12), 0, 1, {}).isOk());
    EXPECT_TRUE(intruder.value().closedWithin(3));
  }
  processLog().set_level(level);
  std::erase(processLog().sinks(), sink);
  size_t violations = 0, wrong_secret = 0, summaries = 0;
  for (const std::string& line : sink->last_formatted()) {
    violations += line.find("bad magic") != std::string::npos ? 1 : 0;
    wrong_secret += line.find("wrong job secret") != std::string::npos ? 1 : 0;
    summaries += line.find("12 more 'protocol violation' drops") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(violations, 8u) << "a burst of warnings per kind";
  EXPECT_EQ(wrong_secret, 1u) << "a different kind is not silenced";
  EXPECT_EQ(summaries, 1u) << "the drops held back are summarised";
}

TEST(BootstrapTest, StalledClientIsDroppedAfterTheHelloTimeout) {
  Config config = loopbackConfig();
  config.timeout_s = 0.3;  // the hello timeout is min(5 s, PSDP_TIMEOUT)
  auto root = startRoot(secretOf(9), 10, config);
  ASSERT_NE(root, nullptr);
  auto loris = RawClient::connect(root->id().port);
  ASSERT_TRUE(loris.isOk());
  auto start = Clock::now();
  ASSERT_TRUE(loris.value().readServerHello().isOk());
  EXPECT_TRUE(loris.value().closedWithin(3));
  EXPECT_GE(secondsSince(start), 0.2);
  EXPECT_FALSE(root->finished());  // one bad peer does not end the rendezvous
}

TEST(BootstrapTest, RootDeadlineNamesTheMissingRank) {
  auto root = startRoot(secretOf(10), 1.0);
  ASSERT_NE(root, nullptr);
  std::vector<RankSpec> specs = {{0, 3, secretOf(10), 0}, {1, 3, secretOf(10), 0}};
  auto start = Clock::now();
  auto results = runRanks("127.0.0.1", root->id().port, specs, loopbackConfig(), 5);
  for (const auto& r : results) expectError(r, PSDP_ERR_TIMEOUT, {"ranks 2 of 3", "within 1 s (PSDP_TIMEOUT)"});
  EXPECT_LT(secondsSince(start), 3.0);
}

// The clients give up first: the root answers each just before, so they still learn who is missing.
TEST(BootstrapTest, ClientDeadlineStillNamesTheMissingRank) {
  auto root = startRoot(secretOf(11), 10);
  ASSERT_NE(root, nullptr);
  std::vector<RankSpec> specs = {{0, 3, secretOf(11), 0}, {2, 3, secretOf(11), 0}};
  auto start = Clock::now();
  auto results = runRanks("127.0.0.1", root->id().port, specs, loopbackConfig(), 1.0);
  // The first client whose time is up fails the rendezvous for both, naming the rank that never came.
  for (const auto& r : results) expectError(r, PSDP_ERR_TIMEOUT, {"ranks 1 of 3", "own timeout"});
  EXPECT_LT(secondsSince(start), 2.0);
}

TEST(BootstrapTest, NoRootTimesOutNamingTheAddress) {
  auto addr = SockAddr::numeric("127.0.0.1", 0);
  auto closed = listenOn(addr.value());
  ASSERT_TRUE(closed.isOk());
  uint16_t port = localAddress(closed.value().get()).value().port();
  closed.value().reset();  // nobody listens there now
  auto start = Clock::now();
  auto results = runRanks("127.0.0.1", port, jobOf(1, secretOf(12)), loopbackConfig(), 0.5);
  expectError(results[0], PSDP_ERR_TIMEOUT, {fmt::format("127.0.0.1:{}", port).c_str(), "within"});
  EXPECT_LT(secondsSince(start), 2.0);
}

TEST(BootstrapTest, DestroyingAWaitingRootJoinsPromptly) {
  auto root = startRoot(secretOf(13), 60);
  ASSERT_NE(root, nullptr);
  RawClient client = registeredClient(root->id().port, secretOf(13), 0, 2);
  auto start = Clock::now();
  root.reset();
  EXPECT_LT(secondsSince(start), 1.0);
  auto aborted = client.readFrameType();  // told, rather than left to find a closed socket
  ASSERT_TRUE(aborted.isOk()) << aborted.status().toString();
  EXPECT_EQ(aborted.value(), static_cast<uint16_t>(bootstrap::FrameType::kError));
  EXPECT_TRUE(client.closedWithin(2));
}

// The owner (rank 0's communicator) destroys the root as soon as its own table arrives. Tables far larger
// than the other ranks' (shrunk) socket buffers must still reach them, though they only start reading once
// the destructor runs.
TEST(BootstrapTest, DestroyingTheRootAfterTheRendezvousStillDeliversEveryTable) {
  constexpr int kRanks = 8;
  auto root = startRoot(secretOf(17));
  ASSERT_NE(root, nullptr);
  std::vector<RawClient> others;
  for (int r = 1; r < kRanks; ++r) {
    auto c = RawClient::connect(root->id().port, 4096);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    ASSERT_TRUE(c.value().handshake(secretOf(17)).isOk());
    ASSERT_TRUE(c.value()
                    .sendHello(secretOf(17), r, kRanks,
                               std::vector<std::byte>(bootstrap::kMaxPayloadBytes, static_cast<std::byte>(r)))
                    .isOk());
    auto accepted = c.value().readFrameType();
    ASSERT_TRUE(accepted.isOk() && accepted.value() == static_cast<uint16_t>(bootstrap::FrameType::kAccepted));
    others.push_back(std::move(c).value());
  }
  std::vector<Result<uint16_t>> received(others.size(), Result<uint16_t>(Status::internal("not read")));
  std::latch start_reading(1);
  std::vector<std::thread> readers;
  for (size_t i = 0; i < others.size(); ++i) {
    readers.emplace_back([&, i] {
      start_reading.wait();
      received[i] = others[i].readFrameType();
    });
  }
  auto mine = exchangeViaRoot(root->id(), 0, kRanks, {}, loopbackConfig(), Deadline::after(10), nullptr);
  start_reading.count_down();
  auto start = Clock::now();
  root.reset();
  EXPECT_LT(secondsSince(start), 1.5);
  for (auto& t : readers) t.join();
  ASSERT_TRUE(mine.isOk()) << mine.status().toString();
  EXPECT_EQ(mine.value()[kRanks - 1].size(), bootstrap::kMaxPayloadBytes);
  for (size_t i = 0; i < received.size(); ++i) {
    ASSERT_TRUE(received[i].isOk()) << "rank " << i + 1 << ": " << received[i].status().toString();
    EXPECT_EQ(received[i].value(), static_cast<uint16_t>(bootstrap::FrameType::kTable));
  }
}

// A registered rank whose connection dies has failed (its process died, or it gave up): every rank, those
// waiting and those still to come, fails at once naming it, instead of waiting for its timeout.
TEST(BootstrapTest, ARankThatLeavesFailsEveryRankAtOnceNamingIt) {
  auto root = startRoot(secretOf(14), 30);
  ASSERT_NE(root, nullptr);
  RawClient waiting = registeredClient(root->id().port, secretOf(14), 0, 3);
  { RawClient leaver = registeredClient(root->id().port, secretOf(14), 1, 3); }  // accepted, then its process "dies"
  auto start = Clock::now();
  auto told = waiting.readFrameType();
  ASSERT_TRUE(told.isOk()) << told.status().toString();
  EXPECT_EQ(told.value(), static_cast<uint16_t>(bootstrap::FrameType::kError));
  auto late = runRanks("127.0.0.1", root->id().port, {{2, 3, secretOf(14), 0}}, loopbackConfig(), 30);
  expectError(late[0], PSDP_ERR_REMOTE, {"rank 1", "left the bootstrap root", "died or gave up"});
  EXPECT_LT(secondsSince(start), 2.0);
}

// A listener squatting on the lowest port of the scanned range speaks the protocol but cannot prove the
// secret: each rank sends it only a challenge (a random nonce: nothing derived from the secret, so nothing
// to guess the secret from offline), warns once naming it, and forms the job with the real root above it.
TEST(BootstrapTest, ASquatterInTheScannedRangeLearnsNothingAndIsNamed) {
  auto listener = testing::LoopbackListener::open();
  ASSERT_TRUE(listener.isOk()) << listener.status().toString();
  const uint16_t squat_port = listener.value().port();
  std::atomic<bool> stop{false};
  std::vector<std::vector<std::byte>> heard;  // everything each connection sent, until it closed
  std::thread squatter([&] {
    while (!stop.load()) {
      auto accepted = listener.value().accept(0.05);
      if (!accepted.isOk()) continue;
      Socket& socket = accepted.value();
      const Deadline deadline = Deadline::after(5);
      // Its best effort: a well-formed proof under a secret it made up.
      auto nonces = testing::serveHandshake(socket, secretOf(99), deadline);
      std::vector<std::byte> got;
      if (nonces.isOk()) {
        got.assign(bootstrap::kHeaderBytes + bootstrap::kNonceBytes, std::byte{0});  // the challenge it read
        std::array<std::byte, 1> byte{};
        while (socket.recvAll(byte, deadline).isOk()) got.push_back(byte[0]);
      }
      heard.push_back(std::move(got));
    }
  });
  Config config = loopbackConfig();
  config.port_range = PortRange{squat_port + 1, squat_port + 16};
  auto root = startRoot(secretOf(21), 10, config);
  ASSERT_NE(root, nullptr);
  config.port_range.lo = squat_port;
  WarningCapture warnings;
  auto results = runRanks("127.0.0.1", 0, jobOf(3, secretOf(21)), config, 10, warnings.sink());
  stop = true;
  squatter.join();
  for (size_t i = 0; i < results.size(); ++i) expectFullTable(results[i], 3, i);
  ASSERT_EQ(heard.size(), 3u) << "one visit per rank";
  for (const auto& bytes : heard) {
    EXPECT_EQ(bytes.size(), bootstrap::kHeaderBytes + bootstrap::kNonceBytes) << "only the challenge";
  }
  EXPECT_EQ(warnings.count(fmt::format("127.0.0.1:{} could not prove it holds our job secret", squat_port)), 3u);
}

// A relay between a rank and the real root passes the handshake through (it cannot forge it) and then
// alters the table: the rank rejects it, naming the root it got it from, and the other rank is unharmed.
TEST(BootstrapTest, AnAlteredTableIsRejectedNamingItsSender) {
  auto root = startRoot(secretOf(22));
  ASSERT_NE(root, nullptr);
  auto listener = testing::LoopbackListener::open();
  ASSERT_TRUE(listener.isOk()) << listener.status().toString();
  const uint16_t relay_port = listener.value().port();
  std::thread relay([&] {
    auto accepted = listener.value().accept(10);
    if (!accepted.isOk()) return;
    Socket& rank = accepted.value();
    const Deadline deadline = Deadline::after(10);
    auto upstream = Socket::connect(SockAddr::numeric("127.0.0.1", root->id().port).value(), deadline);
    if (!upstream.isOk()) return;
    Socket& to_root = upstream.value();
    // server hello, challenge, proof, hello, accepted, then the table, altered in its last byte
    const bool from_root[] = {true, false, true, false, true, true};
    for (size_t i = 0; i < std::size(from_root); ++i) {
      Socket& from = from_root[i] ? to_root : rank;
      Socket& to = from_root[i] ? rank : to_root;
      auto frame = testing::readFrame(from, uint64_t{1} << 20, deadline);
      if (!frame.isOk()) return;
      if (i + 1 == std::size(from_root)) frame.value().bytes.back() ^= std::byte{1};
      if (!to.sendAll(frame.value().bytes, deadline).isOk()) return;
    }
  });
  std::vector<RankSpec> specs = {{0, 2, secretOf(22), 0}, {1, 2, secretOf(22), relay_port}};
  auto results = runRanks("127.0.0.1", root->id().port, specs, loopbackConfig(), 10);
  relay.join();
  expectFullTable(results[0], 2, 0);
  expectError(
      results[1], PSDP_ERR_REMOTE,
      {"table from the bootstrap root fails its integrity check", fmt::format("127.0.0.1:{}", relay_port).c_str()});
}

// A root whose process dies after accepting our hello (here a hand-made one that closes the connection):
// the rank says that the root went away, not merely that a connection closed.
TEST(BootstrapTest, ARootThatGoesAwayIsNamed) {
  auto listener = testing::LoopbackListener::open();
  ASSERT_TRUE(listener.isOk()) << listener.status().toString();
  const uint16_t port = listener.value().port();
  std::thread fake([&] {
    auto accepted_socket = listener.value().accept(10);
    if (!accepted_socket.isOk()) return;
    Socket& socket = accepted_socket.value();
    const Deadline deadline = Deadline::after(10);
    auto nonces = testing::serveHandshake(socket, secretOf(15), deadline);
    if (!nonces.isOk()) return;
    if (!testing::readFrame(socket, bootstrap::kMaxHelloBodyBytes, deadline).isOk()) return;
    auto accepted = bootstrap::encodeSealed(bootstrap::FrameType::kAccepted, secretOf(15), nonces.value(), {});
    if (accepted.isOk()) (void)socket.sendAll(accepted.value(), deadline);
  });  // the socket closes as the thread ends: the root is gone
  auto results = runRanks("127.0.0.1", port, {{1, 2, secretOf(15), 0}}, loopbackConfig(), 10);
  fake.join();
  expectError(results[0], PSDP_ERR_REMOTE, {"bootstrap root (rank 0's process) went away", "127.0.0.1"});
}

TEST(BootstrapTest, DetachedRootsServeARendezvousEach) {
  for (int job = 0; job < 2; ++job) {
    auto id = startDetachedRoot(loopbackConfig());
    ASSERT_TRUE(id.isOk()) << id.status().toString();
    EXPECT_EQ(id.value().host, "127.0.0.1");
    std::vector<RankSpec> specs = jobOf(2, id.value().secret);
    auto results = runRanks(id.value().host, id.value().port, specs, loopbackConfig(), 10);
    for (size_t i = 0; i < results.size(); ++i) expectFullTable(results[i], 2, i);
  }
}

TEST(BootstrapTest, ArgumentErrors) {
  RendezvousId id{"127.0.0.1", 1, secretOf(15)};
  Config config = loopbackConfig();
  std::vector<std::byte> big(bootstrap::kMaxPayloadBytes + 1);
  auto r = exchangeViaRoot(id, 0, 1, big, config, Deadline::after(1), nullptr);
  expectError(r, PSDP_ERR_INVALID_ARGUMENT, {"payload"});
  expectError(exchangeViaRoot(id, 2, 2, {}, config, Deadline::after(1), nullptr), PSDP_ERR_INVALID_ARGUMENT,
              {"rank 2"});
  expectError(exchangeViaRoot(id, 0, 0, {}, config, Deadline::after(1), nullptr), PSDP_ERR_INVALID_ARGUMENT,
              {"nranks"});
  id.port = 0;  // scan, but there is no range
  expectError(exchangeViaRoot(id, 0, 1, {}, config, Deadline::after(1), nullptr), PSDP_ERR_INVALID_ARGUMENT,
              {"PSDP_PORT_RANGE"});
}

TEST(BootstrapTest, StartReportsBusyPorts) {
  auto addr = SockAddr::numeric("127.0.0.1", 0);
  auto busy = listenOn(addr.value());
  ASSERT_TRUE(busy.isOk());
  int port = localAddress(busy.value().get()).value().port();
  Config config = loopbackConfig();
  auto fixed = RootServer::start("127.0.0.1", static_cast<uint16_t>(port), secretOf(16), config, Deadline::after(1));
  ASSERT_FALSE(fixed.isOk());
  EXPECT_EQ(fixed.status().code(), PSDP_ERR_SYSTEM);
  config.port_range = PortRange{port, port};
  auto ranged = RootServer::start("127.0.0.1", 0, secretOf(16), config, Deadline::after(1));
  ASSERT_FALSE(ranged.isOk());
  EXPECT_NE(ranged.status().message().find("PSDP_PORT_RANGE"), std::string::npos) << ranged.status().message();
}

// psdp-run binds rank 0's port itself and hands the socket down (PSDP_ROOT_FD), so the port cannot be taken
// between choosing and binding it. The root adopts only a listening socket bound to exactly its address, and
// only once per process (later the number may name another file); anything else is left open and ignored.
// One test, because adoption is process-wide.
TEST(BootstrapTest, RootAdoptsAnInheritedListenerOnlyWhenItFits) {
  auto any = SockAddr::numeric("127.0.0.1", 0).value();
  auto inherited = listenOn(any);
  ASSERT_TRUE(inherited.isOk());
  const uint16_t port = localAddress(inherited.value().get()).value().port();
  auto other = listenOn(any);
  ASSERT_TRUE(other.isOk());
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd pipe_r(pipe_fds[0]), pipe_w(pipe_fds[1]);

  // Not a socket, and a socket bound to another port: ignored, so the root binds `port` itself and finds
  // it taken by the real listener.
  for (int wrong : {pipe_r.get(), other.value().get()}) {
    auto root = RootServer::start("127.0.0.1", port, secretOf(40), loopbackConfig(), Deadline::after(5), wrong);
    ASSERT_FALSE(root.isOk()) << "fd " << wrong;
    EXPECT_EQ(root.status().code(), PSDP_ERR_SYSTEM) << root.status().toString();
    EXPECT_GE(::fcntl(wrong, F_GETFD), 0) << "an fd that was not adopted must stay open";
  }

  int fd = inherited.value().release();
  auto root = RootServer::start("127.0.0.1", port, secretOf(41), loopbackConfig(), Deadline::after(10), fd);
  ASSERT_TRUE(root.isOk()) << root.status().toString();
  EXPECT_EQ(root.value()->id().port, port);
  auto results = runRanks("127.0.0.1", port, jobOf(2, secretOf(41)), loopbackConfig(), 10);
  for (size_t i = 0; i < results.size(); ++i) expectFullTable(results[i], 2, i);

  // A second communicator of the process never adopts again, even a socket that would fit.
  const uint16_t other_port = localAddress(other.value().get()).value().port();
  auto again = RootServer::start("127.0.0.1", other_port, secretOf(42), loopbackConfig(), Deadline::after(5),
                                 other.value().get());
  ASSERT_FALSE(again.isOk());
  EXPECT_EQ(again.status().code(), PSDP_ERR_SYSTEM) << again.status().toString();
}

// The root binds the chosen interface's address, never the wildcard: with PSDP_SOCKET_IFNAME=lo nothing
// outside this host can reach it. Checked in the kernel's own socket table, not in what the root reports.
TEST(BootstrapTest, RootListensOnlyOnTheChosenInterface) {
  Config config = loopbackConfig();  // socket_ifname "lo"
  // No host given (as psdp_get_unique_id): the interface decides.
  auto chosen = RootServer::start("", 0, secretOf(19), config, Deadline::after(10));
  ASSERT_TRUE(chosen.isOk()) << chosen.status().toString();
  EXPECT_EQ(chosen.value()->id().host, "127.0.0.1");
  EXPECT_EQ(listenersOn(chosen.value()->id().port), std::vector<std::string>{"127.0.0.1"});
  auto detached = startDetachedRoot(config);
  ASSERT_TRUE(detached.isOk()) << detached.status().toString();
  EXPECT_EQ(listenersOn(detached.value().port), std::vector<std::string>{"127.0.0.1"});
  // Served, so that the detached root ends now rather than at its deadline.
  auto results = runRanks(detached.value().host, detached.value().port, jobOf(1, detached.value().secret), config, 10);
  expectFullTable(results[0], 1, 0);

  // No interface named: still one specific address (the first usable interface's), never 0.0.0.0 or ::.
  config.socket_ifname.clear();
  auto automatic = RootServer::start("", 0, secretOf(20), config, Deadline::after(10));
  ASSERT_TRUE(automatic.isOk()) << automatic.status().toString();
  EXPECT_EQ(listenersOn(automatic.value()->id().port), std::vector<std::string>{automatic.value()->id().host});
}

TEST(BootstrapTest, InterfaceSelection) {
  auto lo = interfaceAddress("lo");
  ASSERT_TRUE(lo.isOk()) << lo.status().toString();
  EXPECT_EQ(lo.value(), "127.0.0.1");
  auto any = interfaceAddress("");
  ASSERT_TRUE(any.isOk()) << any.status().toString();
  EXPECT_TRUE(SockAddr::numeric(any.value(), 0).isOk());
  auto none = interfaceAddress("psdp-no-such0");
  ASSERT_FALSE(none.isOk());
  EXPECT_NE(none.status().message().find("psdp-no-such0"), std::string::npos);
}

}  // namespace
}  // namespace psdp::core
