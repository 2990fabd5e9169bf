// PSDP_DETERMINISTIC and recursive halving/doubling across real processes, run by psdp-run:
//   psdp-run -n 3 -- mp_deterministic
// Random non-integer float32 and bfloat16 data (seeded by rank). Communicators split from one parent with
// different chunk sizes and algorithms but PSDP_DETERMINISTIC=1 must give the same all-reduce bits as the
// parent; a communicator forced to rhd (not deterministic) must give every rank the same bits.
#include <psdp/psdp.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

int g_rank = 0;
int g_nranks = 1;
psdp::mp::Report g_report;

uint16_t toBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);  // nearest even; no NaNs here
}

std::vector<unsigned char> randomInput(psdp_dtype_t dtype, size_t count) {
  std::mt19937 gen(static_cast<unsigned>(77 + g_rank));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const size_t esize = dtype == PSDP_BFLOAT16 ? 2 : 4;
  std::vector<unsigned char> data(count * esize);
  for (size_t i = 0; i < count; ++i) {
    float v = dist(gen) * 2.71828f;
    if (dtype == PSDP_BFLOAT16) {
      uint16_t b = toBf16(v);
      std::memcpy(data.data() + i * 2, &b, 2);
    } else {
      std::memcpy(data.data() + i * 4, &v, 4);
    }
  }
  return data;
}

std::vector<unsigned char> allReduce(psdp_comm_h comm, psdp_dtype_t dtype, size_t count, const std::string& name) {
  std::vector<unsigned char> data = randomInput(dtype, count);
  psdp_status_t s = psdp_all_reduce(data.data(), data.data(), count, dtype, PSDP_SUM, comm, nullptr, nullptr);
  g_report.check(s == PSDP_SUCCESS, name + ": all-reduce: " + why(comm, s));
  return data;
}

// Every rank's `result` must be the same bytes: gathered over `parent` and compared with this rank's.
void checkSameOnEveryRank(psdp_comm_h parent, const std::vector<unsigned char>& result, const std::string& name) {
  std::vector<unsigned char> all(result.size() * static_cast<size_t>(g_nranks));
  psdp_status_t s = psdp_all_gather(result.data(), all.data(), result.size(), PSDP_UINT8, parent, nullptr, nullptr);
  g_report.check(s == PSDP_SUCCESS, name + ": all-gather: " + why(parent, s));
  for (int r = 0; r < g_nranks; ++r) {
    bool same = std::memcmp(all.data() + static_cast<size_t>(r) * result.size(), result.data(), result.size()) == 0;
    g_report.check(same, name + ": rank " + std::to_string(r) + "'s result differs from this rank's");
  }
}

psdp_comm_h splitWith(psdp_comm_h parent, size_t fragment_bytes, psdp_algorithm_t algorithm, int deterministic) {
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  config.fragment_bytes = fragment_bytes;
  config.algorithm = algorithm;
  config.deterministic = deterministic;
  psdp_comm_h child = nullptr;
  psdp_status_t s = psdp_comm_split(parent, 0, g_rank, &config, &child);
  g_report.check(s == PSDP_SUCCESS && child != nullptr, "split: " + why(parent, s));
  return child;
}

}  // namespace

int main() {
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  config.deterministic = 1;
  psdp_comm_h parent = nullptr;
  psdp_status_t s = psdp_comm_init_from_env(&config, &parent);
  if (s != PSDP_SUCCESS) {
    std::fprintf(stderr, "init failed: %s\n", why(nullptr, s).c_str());
    return 1;
  }
  psdp_comm_rank(parent, &g_rank);
  psdp_comm_size(parent, &g_nranks);
  g_report.setRank(g_rank);

  psdp_comm_h small_chunks = splitWith(parent, 1024, PSDP_ALGORITHM_RHD, 1);
  psdp_comm_h other_chunks = splitWith(parent, 4096, PSDP_ALGORITHM_AUTO, 1);
  psdp_comm_h rhd = splitWith(parent, 0, PSDP_ALGORITHM_RHD, 0);
  if (small_chunks == nullptr || other_chunks == nullptr || rhd == nullptr) return g_report.finish();

  for (psdp_dtype_t dtype : {PSDP_FLOAT32, PSDP_BFLOAT16}) {
    for (size_t count : {size_t{1000}, size_t{100003}}) {
      std::string what =
          std::string(dtype == PSDP_FLOAT32 ? "float32" : "bfloat16") + " count " + std::to_string(count);
      std::vector<unsigned char> reference = allReduce(parent, dtype, count, "parent " + what);
      checkSameOnEveryRank(parent, reference, "parent " + what);
      g_report.check(allReduce(small_chunks, dtype, count, "1 KiB chunks " + what) == reference,
                     "deterministic, 1 KiB chunks, rhd asked: " + what + " differs from the parent's result");
      g_report.check(allReduce(other_chunks, dtype, count, "4 KiB chunks " + what) == reference,
                     "deterministic, 4 KiB chunks, auto: " + what + " differs from the parent's result");
      checkSameOnEveryRank(parent, allReduce(rhd, dtype, count, "rhd " + what), "rhd " + what);
    }
  }
  for (psdp_comm_h comm : {rhd, other_chunks, small_chunks, parent}) {
    s = psdp_comm_finalize(comm);
    g_report.check(s == PSDP_SUCCESS, "finalize: " + why(comm, s));
    psdp_comm_destroy(comm);
  }
  return g_report.finish();
}
