#include "unit/api/bad_input_cases.h"

#include <cstddef>
#include <limits>
#include <utility>

namespace psdp::testing {
namespace {

// Elements per rank in the calls' buffers.
constexpr size_t kCount = 4;
constexpr size_t kMaxElemBytes = 8;
constexpr size_t kInt32Bytes = 4;

enum class Entry {
  kReduceScatter,
  kAllGather,
  kAllReduce,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
  kAllToAll,
  kAllGatherV,
  kReduceScatterV,
  kSend,
  kRecv
};
constexpr Entry kEntries[] = {Entry::kReduceScatter, Entry::kAllGather,      Entry::kAllReduce, Entry::kBroadcast,
                              Entry::kReduce,        Entry::kGather,         Entry::kScatter,   Entry::kAllToAll,
                              Entry::kAllGatherV,    Entry::kReduceScatterV, Entry::kSend,      Entry::kRecv};

const char* entryName(Entry entry) {
  switch (entry) {
    case Entry::kReduceScatter: return "reduce-scatter";
    case Entry::kAllGather: return "all-gather";
    case Entry::kAllReduce: return "all-reduce";
    case Entry::kBroadcast: return "broadcast";
    case Entry::kReduce: return "reduce";
    case Entry::kGather: return "gather";
    case Entry::kScatter: return "scatter";
    case Entry::kAllToAll: return "all-to-all";
    case Entry::kAllGatherV: return "all-gather-v";
    case Entry::kReduceScatterV: return "reduce-scatter-v";
    case Entry::kSend: return "send";
    case Entry::kRecv: return "recv";
  }
  return "?";
}

struct Args {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = kCount;
  const size_t* counts = nullptr;  // the -v calls': `count` for every rank
  psdp_dtype_t dtype = PSDP_INT32;
  psdp_op_t op = PSDP_SUM;
  int root = 0;  // the peer of send and recv
  void* stream = nullptr;
};

psdp_status_t invoke(Entry entry, const Args& a, psdp_comm_h comm, psdp_request_h* request_p) {
  switch (entry) {
    case Entry::kReduceScatter:
      return psdp_reduce_scatter(a.send, a.recv, a.count, a.dtype, a.op, comm, a.stream, request_p);
    case Entry::kAllGather: return psdp_all_gather(a.send, a.recv, a.count, a.dtype, comm, a.stream, request_p);
    case Entry::kAllReduce: return psdp_all_reduce(a.send, a.recv, a.count, a.dtype, a.op, comm, a.stream, request_p);
    case Entry::kBroadcast: return psdp_broadcast(a.send, a.recv, a.count, a.dtype, a.root, comm, a.stream, request_p);
    case Entry::kReduce: return psdp_reduce(a.send, a.recv, a.count, a.dtype, a.op, a.root, comm, a.stream, request_p);
    case Entry::kGather: return psdp_gather(a.send, a.recv, a.count, a.dtype, a.root, comm, a.stream, request_p);
    case Entry::kScatter: return psdp_scatter(a.send, a.recv, a.count, a.dtype, a.root, comm, a.stream, request_p);
    case Entry::kAllToAll: return psdp_all_to_all(a.send, a.recv, a.count, a.dtype, comm, a.stream, request_p);
    case Entry::kAllGatherV: return psdp_all_gather_v(a.send, a.recv, a.counts, a.dtype, comm, a.stream, request_p);
    case Entry::kReduceScatterV:
      return psdp_reduce_scatter_v(a.send, a.recv, a.counts, a.dtype, a.op, comm, a.stream, request_p);
    case Entry::kSend: return psdp_send(a.send, a.count, a.dtype, a.root, comm, a.stream, request_p);
    case Entry::kRecv: return psdp_recv(a.recv, a.count, a.dtype, a.root, comm, a.stream, request_p);
  }
  return PSDP_ERR_INTERNAL;
}

bool contains(const std::string& text, const std::string& word) {
  return text.find(word) != std::string::npos;
}

std::string statusName(psdp_status_t s) {
  return psdp_status_string(s);
}

// Premul-sum ops for the op cases: one destroyed, one made for another dtype than the calls use.
struct PremulOps {
  psdp_status_t status = PSDP_SUCCESS;  // of making them
  std::string error;
  psdp_op_t destroyed = PSDP_SUM;
  psdp_op_t float32 = PSDP_SUM;
};

PremulOps makePremulOps(psdp_comm_h comm) {
  PremulOps ops;
  int32_t two = 2;
  float two_f = 2.0f;
  ops.status = psdp_op_create_premul_sum(comm, &two, PSDP_INT32, &ops.destroyed);
  if (ops.status == PSDP_SUCCESS) ops.status = psdp_op_destroy(comm, ops.destroyed);
  if (ops.status == PSDP_SUCCESS) ops.status = psdp_op_create_premul_sum(comm, &two_f, PSDP_FLOAT32, &ops.float32);
  if (ops.status != PSDP_SUCCESS) ops.error = psdp_get_last_error(comm);
  return ops;
}

// The bad calls of one entry point, each added in blocking and nonblocking form.
class EntryCases {
 public:
  EntryCases(Entry entry, int rank, int nranks, BadInputArena& arena, std::vector<BadCall>& out)
      : entry_(entry), rank_(rank), nranks_(nranks), arena_(arena), out_(out) {}

  // Separate send and receive buffers; the root (and the peer) is this rank, whose buffers are the ones checked.
  Args valid() const {
    Args a;
    a.send = arena_.first();
    a.recv = arena_.second();
    a.counts = arena_.counts(kCount);
    a.root = rank_;
    return a;
  }

  void add(const std::string& what, Args a, std::vector<std::string> words, const std::string& absent = "",
           psdp_status_t expected = PSDP_ERR_INVALID_ARGUMENT) {
    if (a.counts != nullptr) a.counts = arena_.counts(a.count);
    for (bool nonblocking : {false, true}) {
      std::string name = std::string(entryName(entry_)) + (nonblocking ? ", nonblocking: " : ", blocking: ") + what;
      Entry entry = entry_;
      out_.push_back(BadCall{name, expected, words, absent, nonblocking,
                             [entry, a](psdp_comm_h comm, psdp_request_h* r) { return invoke(entry, a, comm, r); }});
    }
  }

  void addPointerCases();
  void addCountAndTypeCases(const PremulOps& ops);
  void addOverlapCase();
  void addRootCases();

 private:
  bool reduces() const {
    return entry_ == Entry::kReduceScatter || entry_ == Entry::kAllReduce || entry_ == Entry::kReduce ||
           entry_ == Entry::kReduceScatterV;
  }
  bool hasSendbuf() const { return entry_ != Entry::kRecv; }
  bool hasRecvbuf() const { return entry_ != Entry::kSend; }
  bool perRankCounts() const { return entry_ == Entry::kAllGatherV || entry_ == Entry::kReduceScatterV; }

  Entry entry_;
  int rank_;
  int nranks_;
  BadInputArena& arena_;
  std::vector<BadCall>& out_;
};

void EntryCases::addPointerCases() {
  Args a = valid();
  if (hasSendbuf()) {
    a.send = nullptr;
    add("NULL sendbuf, count > 0", a, {"sendbuf", "NULL"});
    a = valid();
    a.send = arena_.first(1);
    add("sendbuf misaligned for int32", a, {"sendbuf", "aligned", "4-byte"}, "recvbuf");
    a = valid();
    a.dtype = PSDP_FLOAT64;
    a.send = arena_.first(4);
    add("sendbuf 4-byte aligned, float64 needs 8", a, {"sendbuf", "aligned", "8-byte"}, "recvbuf");
  }
  if (hasRecvbuf()) {
    a = valid();
    a.recv = nullptr;
    add("NULL recvbuf, count > 0", a, {"recvbuf", "NULL"});
    a = valid();
    a.recv = arena_.second(2);
    add("recvbuf misaligned for int32", a, {"recvbuf", "aligned", "4-byte"}, "sendbuf");
  }
  if (perRankCounts()) {
    a = valid();
    a.counts = nullptr;
    add("NULL recvcounts", a, {"recvcounts", "NULL"});
  }
  a = valid();
  a.stream = arena_.first();
  add("non-NULL stream", a, {"stream"}, "", PSDP_ERR_UNSUPPORTED);
}

void EntryCases::addCountAndTypeCases(const PremulOps& ops) {
  Args a = valid();
  a.count = std::numeric_limits<size_t>::max() / kInt32Bytes + 1;
  add("count whose int32 byte size overflows size_t", a, {"count", "overflow"});
  a = valid();
  a.dtype = PSDP_INT8;
  a.count = std::numeric_limits<size_t>::max();
  add("count SIZE_MAX of int8 (fits size_t, but no buffer is that large)", a, {"count", "overflow"});
  a = valid();
  a.dtype = static_cast<psdp_dtype_t>(99);
  add("unknown dtype 99", a, {"dtype 99"});
  a = valid();
  a.dtype = PSDP_NUM_DTYPES;
  add("dtype PSDP_NUM_DTYPES", a, {"dtype " + std::to_string(PSDP_NUM_DTYPES)});
  if (!reduces()) return;
  a = valid();
  a.op = static_cast<psdp_op_t>(1000000);
  add("unknown op 1000000", a, {"unknown op 1000000"});
  if (ops.status != PSDP_SUCCESS) {
    // Reported as a case of its own rather than silently skipped.
    out_.push_back(BadCall{"making premul-sum ops for the op cases: " + ops.error,
                           PSDP_SUCCESS,
                           {},
                           "",
                           false,
                           [s = ops.status](psdp_comm_h, psdp_request_h*) { return s; }});
    return;
  }
  a = valid();
  a.op = ops.destroyed;
  add("destroyed premul-sum op", a, {"op " + std::to_string(static_cast<int>(ops.destroyed)), "not a live"});
  a = valid();
  a.op = ops.float32;
  add("premul-sum op made for float32, used on int32", a, {"created for float32"});
}

// In place is one exact alignment of the two buffers (psdp.h); one element off overlaps without being it. The
// root is this rank, so the rooted calls check both buffers.
void EntryCases::addOverlapCase() {
  Args a = valid();
  size_t own_block = static_cast<size_t>(rank_) * kCount;
  switch (entry_) {
    case Entry::kReduceScatter:  // in place: recvbuf == sendbuf + rank * recvcount
    case Entry::kScatter:
    case Entry::kReduceScatterV:
      a.send = arena_.first();
      a.recv = arena_.first((own_block + 1) * kInt32Bytes);
      break;
    case Entry::kAllGather:  // in place: sendbuf == recvbuf + rank * sendcount
    case Entry::kGather:
    case Entry::kAllGatherV:
      a.recv = arena_.first();
      a.send = arena_.first((own_block + 1) * kInt32Bytes);
      break;
    case Entry::kAllReduce:
    case Entry::kBroadcast:  // in place: sendbuf == recvbuf
    case Entry::kReduce:
    case Entry::kAllToAll:  // never in place
      a.send = arena_.first();
      a.recv = arena_.first(kInt32Bytes);
      break;
    case Entry::kSend:
    case Entry::kRecv: return;  // one buffer
  }
  add("sendbuf and recvbuf overlap one element off in place", a, {"overlap"});
}

void EntryCases::addRootCases() {
  const bool p2p = entry_ == Entry::kSend || entry_ == Entry::kRecv;
  const bool rooted =
      entry_ == Entry::kBroadcast || entry_ == Entry::kReduce || entry_ == Entry::kGather || entry_ == Entry::kScatter;
  if (!p2p && !rooted) return;
  const std::string what = p2p ? "peer " : "root ";
  Args a = valid();
  a.root = nranks_;
  add(what + "== nranks", a, {what + std::to_string(nranks_)});
  a.root = -1;
  add(what + "-1", a, {what + "-1"});
}

}  // namespace

BadInputArena::BadInputArena(int nranks)
    : nranks_(nranks),
      storage_(2 * (static_cast<size_t>(nranks) * kCount + 2)),
      half_(storage_.size() / 2 * kMaxElemBytes) {}

std::vector<BadCall> collectiveBadCalls(psdp_comm_h comm, int rank, int nranks, BadInputArena& arena) {
  PremulOps ops = makePremulOps(comm);
  std::vector<BadCall> calls;
  for (Entry entry : kEntries) {
    EntryCases cases(entry, rank, nranks, arena, calls);
    cases.addPointerCases();
    cases.addCountAndTypeCases(ops);
    cases.addOverlapCase();
    cases.addRootCases();
  }
  return calls;
}

std::string checkBadCall(const BadCall& bad, psdp_comm_h comm) {
  // Never a request: psdp must leave it as it is.
  auto untouched = reinterpret_cast<psdp_request_h>(const_cast<BadCall*>(&bad));
  psdp_request_h request = untouched;
  psdp_status_t s = bad.call(comm, bad.nonblocking ? &request : nullptr);
  std::string error = psdp_get_last_error(comm);
  std::string problems;
  if (s != bad.expected) problems += "returned " + statusName(s) + ", expected " + statusName(bad.expected) + "; ";
  if (request != untouched) {
    problems += "wrote *request_p; ";
    if (s == PSDP_SUCCESS && psdp_request_wait(request) == PSDP_SUCCESS) (void)psdp_request_free(request);
  }
  for (const std::string& word : bad.words) {
    if (!contains(error, word)) problems += "the last error lacks '" + word + "'; ";
  }
  if (!bad.absent.empty() && contains(error, bad.absent)) problems += "the last error names '" + bad.absent + "'; ";
  if (problems.empty()) return "";
  return bad.name + ": " + problems + "last error: '" + error + "'";
}

std::string checkAllReduceWorks(psdp_comm_h comm, int rank, int nranks, int round) {
  constexpr size_t kN = 37;
  std::vector<int32_t> send(kN), recv(kN, -1);
  for (size_t i = 0; i < kN; ++i) send[i] = (rank + 1) * static_cast<int32_t>(i + 1) + round;
  psdp_status_t s = psdp_all_reduce(send.data(), recv.data(), kN, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  if (s != PSDP_SUCCESS) return "correct all-reduce: " + statusName(s) + " " + psdp_get_last_error(comm);
  for (size_t i = 0; i < kN; ++i) {
    int32_t expected = static_cast<int32_t>(i + 1) * nranks * (nranks + 1) / 2 + round * nranks;
    if (recv[i] != expected) {
      return "correct all-reduce: element " + std::to_string(i) + " is " + std::to_string(recv[i]) + ", expected " +
             std::to_string(expected);
    }
  }
  return "";
}

std::vector<std::string> checkDeadHandle(psdp_comm_h dead, bool finalized) {
  struct Outputs {
    int value = -7;
    psdp_request_h request = nullptr;
    psdp_comm_h newcomm = nullptr;
    psdp_op_t op = PSDP_OP_MAX_ENUM;
    psdp_state_h state = nullptr;
    psdp_rank_placement_t placement{-7, -7, -7, -7, {}, {}, PSDP_PATH_LOC};
  };
  Outputs out;
  // Sentinels that are not handles: psdp must not write over them.
  const auto no_request = reinterpret_cast<psdp_request_h>(&out);
  const auto no_comm = reinterpret_cast<psdp_comm_h>(&out);
  int32_t send[kCount] = {1, 2, 3, 4};
  int32_t recv[kCount * 64] = {};
  float scalar = 2.0f;
  const size_t one = 1;
  psdp_buffer_desc_t buffer{"w", send, kCount, PSDP_INT32, PSDP_BUFFER_PARAMETER, PSDP_MEMORY_HOST, 0};
  using Call = std::pair<const char*, std::function<psdp_status_t()>>;
  // Refused on a finalized handle as on a destroyed one.
  std::vector<Call> calls = {
      {"reduce-scatter",
       [&] { return psdp_reduce_scatter(send, recv, 1, PSDP_INT32, PSDP_SUM, dead, nullptr, nullptr); }},
      {"reduce-scatter nonblocking",
       [&] { return psdp_reduce_scatter(send, recv, 1, PSDP_INT32, PSDP_SUM, dead, nullptr, &out.request); }},
      {"all-gather", [&] { return psdp_all_gather(send, recv, 1, PSDP_INT32, dead, nullptr, nullptr); }},
      {"all-gather nonblocking",
       [&] { return psdp_all_gather(send, recv, 1, PSDP_INT32, dead, nullptr, &out.request); }},
      {"all-reduce", [&] { return psdp_all_reduce(send, recv, kCount, PSDP_INT32, PSDP_SUM, dead, nullptr, nullptr); }},
      {"all-reduce nonblocking",
       [&] { return psdp_all_reduce(send, recv, kCount, PSDP_INT32, PSDP_SUM, dead, nullptr, &out.request); }},
      {"broadcast", [&] { return psdp_broadcast(send, recv, kCount, PSDP_INT32, 0, dead, nullptr, nullptr); }},
      {"broadcast nonblocking",
       [&] { return psdp_broadcast(send, recv, kCount, PSDP_INT32, 0, dead, nullptr, &out.request); }},
      {"barrier", [&] { return psdp_barrier(dead, nullptr); }},
      {"barrier nonblocking", [&] { return psdp_barrier(dead, &out.request); }},
      {"split", [&] { return psdp_comm_split(dead, 0, 0, nullptr, &out.newcomm); }},
      {"split_layout", [&] { return psdp_comm_split_layout(dead, 1, nullptr, &out.newcomm, &out.newcomm); }},
      {"op_create_premul_sum", [&] { return psdp_op_create_premul_sum(dead, &scalar, PSDP_FLOAT32, &out.op); }},
      {"finalize", [&] { return psdp_comm_finalize(dead); }},
      {"op_destroy", [&] { return psdp_op_destroy(dead, PSDP_SUM); }},
      {"send", [&] { return psdp_send(send, 1, PSDP_INT32, 0, dead, nullptr, nullptr); }},
      {"recv", [&] { return psdp_recv(recv, 1, PSDP_INT32, 0, dead, nullptr, nullptr); }},
      {"all_to_all", [&] { return psdp_all_to_all(send, recv, 1, PSDP_INT32, dead, nullptr, nullptr); }},
      {"gather", [&] { return psdp_gather(send, recv, 1, PSDP_INT32, 0, dead, nullptr, nullptr); }},
      {"scatter", [&] { return psdp_scatter(send, recv, 1, PSDP_INT32, 0, dead, nullptr, nullptr); }},
      {"reduce", [&] { return psdp_reduce(send, recv, 1, PSDP_INT32, PSDP_SUM, 0, dead, nullptr, nullptr); }},
      {"all_gather_v", [&] { return psdp_all_gather_v(send, recv, &one, PSDP_INT32, dead, nullptr, nullptr); }},
      {"reduce_scatter_v",
       [&] { return psdp_reduce_scatter_v(send, recv, &one, PSDP_INT32, PSDP_SUM, dead, nullptr, nullptr); }},
      {"state_register", [&] { return psdp_state_register(dead, &buffer, 1, nullptr, &out.state); }},
  };
  if (!finalized) {
    // The local queries still answer on a finalized communicator (checkQueriesAfterFinalize).
    std::vector<Call> more = {
        {"comm_rank", [&] { return psdp_comm_rank(dead, &out.value); }},
        {"comm_size", [&] { return psdp_comm_size(dead, &out.value); }},
        {"comm_get_layout", [&] { return psdp_comm_get_layout(dead, 1, &out.value); }},
        {"comm_get_placement", [&] { return psdp_comm_get_placement(dead, 0, &out.placement); }},
        {"comm_abort", [&] { return psdp_comm_abort(dead); }},
        {"comm_destroy", [&] { return psdp_comm_destroy(dead); }},
    };
    calls.insert(calls.end(), more.begin(), more.end());
  }
  const char* word = finalized ? "finalized" : "not a live communicator";
  std::vector<std::string> failures;
  for (const auto& [name, call] : calls) {
    out.request = no_request;
    out.newcomm = no_comm;
    psdp_status_t s = call();
    // A destroyed handle's error belongs to the thread, which psdp_get_last_error(dead) also returns.
    std::string error = psdp_get_last_error(dead);
    std::string problems;
    if (s != PSDP_ERR_INVALID_USAGE) problems += "returned " + statusName(s) + ", expected invalid usage; ";
    if (!contains(error, word)) problems += std::string("the last error lacks '") + word + "'; ";
    if (out.value != -7 || out.request != no_request || out.newcomm != no_comm || out.op != PSDP_OP_MAX_ENUM ||
        out.state != nullptr || out.placement.host != -7) {
      problems += "wrote an output; ";
    }
    if (!problems.empty()) failures.push_back(std::string(name) + ": " + problems + "last error: '" + error + "'");
  }
  return failures;
}

std::vector<std::string> checkQueriesAfterFinalize(psdp_comm_h finalized) {
  std::vector<std::string> failures;
  auto expect = [&](const char* call, psdp_status_t s, bool wrote) {
    if (s != PSDP_SUCCESS) {
      failures.push_back(std::string(call) + ": returned " + statusName(s) + ": " + psdp_get_last_error(finalized));
    } else if (!wrote) {
      failures.push_back(std::string(call) + ": returned success without the answer");
    }
  };
  int rank = -1, size = -1, layout = -1;
  psdp_rank_placement_t placement{};
  placement.host = -1;
  psdp_status_t s = psdp_comm_rank(finalized, &rank);
  expect("comm_rank", s, rank == 0);
  s = psdp_comm_size(finalized, &size);
  expect("comm_size", s, size == 1);
  s = psdp_comm_get_layout(finalized, 1, &layout);
  expect("comm_get_layout", s, layout == 0);
  s = psdp_comm_get_placement(finalized, 0, &placement);
  expect("comm_get_placement", s, placement.host == 0);
  expect("comm_abort (does nothing)", psdp_comm_abort(finalized), true);
  return failures;
}

std::vector<std::string> checkFreedRequest(psdp_request_h freed) {
  using Call = std::pair<const char*, std::function<psdp_status_t()>>;
  std::vector<Call> calls = {
      {"free", [&] { return psdp_request_free(freed); }},
      {"test", [&] { return psdp_request_test(freed); }},
      {"wait", [&] { return psdp_request_wait(freed); }},
      {"wait_timeout", [&] { return psdp_request_wait_timeout(freed, 0.0); }},
      {"wait_all", [&] { return psdp_request_wait_all(&freed, 1); }},
  };
  std::vector<std::string> failures;
  for (const auto& [name, call] : calls) {
    psdp_status_t s = call();
    // A freed request has no communicator any more: the error belongs to the calling thread.
    std::string error = psdp_get_last_error(nullptr);
    if (s != PSDP_ERR_INVALID_USAGE || !contains(error, "not a live request")) {
      failures.push_back(std::string(name) + " of a freed request: " + statusName(s) +
                         ", expected invalid usage naming the request; last error: '" + error + "'");
    }
  }
  return failures;
}

}  // namespace psdp::testing
