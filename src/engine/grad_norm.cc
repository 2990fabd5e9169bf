#include "engine/grad_norm.h"

#include <cmath>
#include <cstring>

#include "coll/half.h"

namespace psdp::engine {
namespace {

template <typename T, typename ToDouble>
double squares(const std::byte* data, size_t count, bool* nonfinite, ToDouble toDouble) {
  // Four sums, so the loop is not one long dependency chain; combined in a fixed order.
  double sum[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    for (size_t k = 0; k < 4; ++k) {
      T v;
      std::memcpy(&v, data + (i + k) * sizeof(T), sizeof(T));
      const double x = toDouble(v);
      sum[k] += x * x;
    }
  }
  for (; i < count; ++i) {
    T v;
    std::memcpy(&v, data + i * sizeof(T), sizeof(T));
    const double x = toDouble(v);
    sum[0] += x * x;
  }
  const double total = (sum[0] + sum[1]) + (sum[2] + sum[3]);
  // Squares of finite values of every psdp dtype stay finite in float64: only an inf or NaN makes it so.
  if (!std::isfinite(total)) *nonfinite = true;
  return total;
}

}  // namespace

double sumOfSquares(const std::byte* data, psdp_dtype_t dtype, size_t count, bool* nonfinite) {
  switch (dtype) {
    case PSDP_FLOAT32: return squares<float>(data, count, nonfinite, [](float v) { return double{v}; });
    case PSDP_FLOAT64: return squares<double>(data, count, nonfinite, [](double v) { return v; });
    case PSDP_FLOAT16:
      return squares<uint16_t>(data, count, nonfinite, [](uint16_t v) { return double{coll::fp16ToFloat(v)}; });
    case PSDP_BFLOAT16:
      return squares<uint16_t>(data, count, nonfinite, [](uint16_t v) { return double{coll::bf16ToFloat(v)}; });
    case PSDP_INT8: return squares<int8_t>(data, count, nonfinite, [](int8_t v) { return double(v); });
    case PSDP_UINT8: return squares<uint8_t>(data, count, nonfinite, [](uint8_t v) { return double(v); });
    case PSDP_INT32: return squares<int32_t>(data, count, nonfinite, [](int32_t v) { return double(v); });
    case PSDP_UINT32: return squares<uint32_t>(data, count, nonfinite, [](uint32_t v) { return double(v); });
    case PSDP_INT64: return squares<int64_t>(data, count, nonfinite, [](int64_t v) { return double(v); });
    case PSDP_UINT64: return squares<uint64_t>(data, count, nonfinite, [](uint64_t v) { return double(v); });
    default: return 0;
  }
}

GradNormReduction::GradNormReduction(size_t chunks, Team* group, Team* replicas, bool level_world, uint64_t step)
    : partial_(chunks, 0.0), nonfinite_(chunks, 0), group_(group), replicas_(level_world ? replicas : nullptr) {
  result_.step = step;
  if (replicas_ != nullptr && !replicas_->exists()) replicas_ = nullptr;
}

void GradNormReduction::addChunk(size_t chunk, double sq, bool nonfinite) {
  partial_[chunk] = sq;
  nonfinite_[chunk] = nonfinite ? 1 : 0;
  ++chunks_done_;
}

Team* GradNormReduction::nextTeam() const {
  return phase_ == 0 ? group_ : replicas_;
}

Result<std::shared_ptr<coll::Request>> GradNormReduction::postNext() {
  Team* team = nextTeam();
  if (team == nullptr || phase_ >= 2) return std::shared_ptr<coll::Request>();
  const size_t members = team->world_ranks.size();
  if (phase_ == 0) {
    // This rank's partial, its chunks added in chunk order so that every replica of it adds alike.
    double sq = 0, bad = 0;
    for (size_t c = 0; c < partial_.size(); ++c) {
      sq += partial_[c];
      bad += nonfinite_[c];
    }
    mine_ = {sq, bad};
    group_values_.assign(2 * members, 0.0);
    PSDP_ASSIGN_OR_RETURN(std::unique_ptr<coll::CollTask> task,
                          team->collectives->postAllGather(mine_.data(), group_values_.data(), 2, PSDP_FLOAT64));
    phase_ = 1;
    return team->queue->post(std::move(task));
  }
  all_values_.assign(group_values_.size() * members, 0.0);
  PSDP_ASSIGN_OR_RETURN(
      std::unique_ptr<coll::CollTask> task,
      team->collectives->postAllGather(group_values_.data(), all_values_.data(), group_values_.size(), PSDP_FLOAT64));
  phase_ = 2;
  return team->queue->post(std::move(task));
}

bool GradNormReduction::gathered() {
  if (phase_ == 1 && replicas_ != nullptr) return false;  // the replicas' gather comes next
  const std::vector<double>& values = phase_ == 2 ? all_values_ : group_values_;
  double sq = 0, bad = 0;
  for (size_t i = 0; i < values.size(); i += 2) {
    sq += values[i];
    bad += values[i + 1];
  }
  result_.sq_norm = sq;
  result_.nonfinite = bad > 0 || !std::isfinite(sq);
  result_.available = true;
  return true;
}

}  // namespace psdp::engine
