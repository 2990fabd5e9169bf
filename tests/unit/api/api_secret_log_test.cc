// The job secret never reaches a log. CTest runs this with PSDP_LOG_LEVEL=debug, PSDP_LOG_FILE=<dir>/
// rank_%r.txt and PSDP_SOCKET_IFNAME=lo: a two-rank init (ranks as threads) through
// psdp_get_unique_id and psdp_comm_init, with an intruder presenting a wrong secret in between, writes the
// process log (the root's lines) and each rank's log to files; none of them may hold the secret (or the
// intruder's), as hex in either case or as raw bytes, nor may the intruder's error message.
#include <gtest/gtest.h>
#include <psdp/psdp.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "unit/api/secret_forms.h"

namespace {

using psdp::testing::secretForms;

namespace fs = std::filesystem;

// "psdp1:<host>:<port>:<32 hex>" (psdp.h).
struct IdText {
  std::string address;  // "host:port"
  std::string secret_hex;
};

IdText splitId(const psdp_unique_id_t& id) {
  char text[PSDP_UNIQUE_ID_STRING_BYTES];
  EXPECT_EQ(psdp_unique_id_to_string(&id, text, sizeof(text)), PSDP_SUCCESS);
  std::string s = text;
  size_t last = s.rfind(':');
  return IdText{s.substr(6, last - 6), s.substr(last + 1)};
}

// The secret's hex with one digit changed: the same rendezvous, the wrong secret.
psdp_unique_id_t withWrongSecret(const psdp_unique_id_t& id) {
  char text[PSDP_UNIQUE_ID_STRING_BYTES];
  EXPECT_EQ(psdp_unique_id_to_string(&id, text, sizeof(text)), PSDP_SUCCESS);
  std::string s = text;
  s.back() = s.back() == '0' ? '1' : '0';
  psdp_unique_id_t wrong;
  EXPECT_EQ(psdp_unique_id_from_string(s.c_str(), &wrong), PSDP_SUCCESS);
  return wrong;
}

std::string readAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(SecretLogTest, DebugLogsOfAnInitHoldNoSecret) {
  const char* pattern = std::getenv("PSDP_LOG_FILE");
  ASSERT_NE(pattern, nullptr) << "run through CTest, which sets PSDP_LOG_FILE and PSDP_LOG_LEVEL=debug";
  const fs::path dir = fs::path(pattern).parent_path();
  // Before the first psdp call opens them: stale lines of an earlier run would only add noise.
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(dir)) fs::remove(entry.path());

  psdp_unique_id_t id;
  ASSERT_EQ(psdp_get_unique_id(&id), PSDP_SUCCESS) << psdp_get_last_error(nullptr);
  const IdText real = splitId(id);
  const psdp_unique_id_t wrong = withWrongSecret(id);
  const IdText intruder = splitId(wrong);

  psdp_comm_h comms[2] = {nullptr, nullptr};
  psdp_status_t status[2] = {PSDP_ERR_INTERNAL, PSDP_ERR_INTERNAL};
  // Rank 0 waits in the rendezvous while the intruder is turned away, then rank 1 completes it.
  std::thread rank0([&] { status[0] = psdp_comm_init(2, &id, 0, nullptr, &comms[0]); });
  psdp_config_t short_wait = PSDP_CONFIG_INITIALIZER;
  short_wait.timeout_s = 5;
  psdp_comm_h intruder_comm = nullptr;
  EXPECT_NE(psdp_comm_init(2, &wrong, 1, &short_wait, &intruder_comm), PSDP_SUCCESS);
  const std::string intruder_error = psdp_get_last_error(nullptr);
  status[1] = psdp_comm_init(2, &id, 1, nullptr, &comms[1]);
  rank0.join();
  ASSERT_EQ(status[0], PSDP_SUCCESS);
  ASSERT_EQ(status[1], PSDP_SUCCESS) << psdp_get_last_error(nullptr);
  std::thread finisher([&] {
    int32_t x = 1;
    EXPECT_EQ(psdp_all_reduce(&x, &x, 1, PSDP_INT32, PSDP_SUM, comms[0], nullptr, nullptr), PSDP_SUCCESS);
    EXPECT_EQ(psdp_comm_finalize(comms[0]), PSDP_SUCCESS);
  });
  int32_t y = 2;
  EXPECT_EQ(psdp_all_reduce(&y, &y, 1, PSDP_INT32, PSDP_SUM, comms[1], nullptr, nullptr), PSDP_SUCCESS);
  EXPECT_EQ(psdp_comm_finalize(comms[1]), PSDP_SUCCESS);
  finisher.join();
  EXPECT_EQ(y, 3);
  EXPECT_EQ(psdp_comm_destroy(comms[0]), PSDP_SUCCESS);
  EXPECT_EQ(psdp_comm_destroy(comms[1]), PSDP_SUCCESS);

  std::string logs;
  for (const auto& entry : fs::directory_iterator(dir)) logs += readAll(entry.path());
  // The capture itself: debug lines of the root and of the ranks, from this run.
  ASSERT_NE(logs.find("bootstrap root listening on " + real.address), std::string::npos) << logs;
  ASSERT_NE(logs.find("rendezvous at " + real.address), std::string::npos) << logs;
  EXPECT_NE(logs.find("could not prove it holds our job secret"), std::string::npos)
      << "the intruder's failure is logged, no secret\n"
      << logs;
  for (const IdText* secret : {&real, &intruder}) {
    for (const std::string& form : secretForms(secret->secret_hex)) {
      EXPECT_EQ(logs.find(form), std::string::npos) << "a log holds part of a secret: '" << form << "'\n" << logs;
      EXPECT_EQ(intruder_error.find(form), std::string::npos) << intruder_error;
    }
  }
}

}  // namespace
