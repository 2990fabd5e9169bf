#include "plan_options.h"

#include <charconv>
#include <cstdint>

namespace psdp::tools {

const char* const kPlanUsage =
    "usage: psdp-plan --model FILE [--name MODEL] --world W [--group G] [--level group|world|both]\n"
    "                 [--chunk BYTES] [--align BYTES] [--pad BYTES] [--param-dtype T] [--grad-dtype T|none]\n"
    "                 [--state-bytes N] [--per-rank] [--json]\n"
    "Shows how psdp shards a model's optimizer state over W ranks in shard groups of G (default W), next to\n"
    "whole tensors assigned largest-first (zero, PyTorch's ZeroRedundancyOptimizer) and per-tensor dim-0\n"
    "splits with padding (fsdp2). BYTES take a K, M or G suffix. Defaults: both levels, psdp's chunk (64M),\n"
    "alignment (256) and padding (none); bfloat16 parameters, float32 gradients, 12 state bytes per element\n"
    "(fp32 master weight and Adam's two moments).\n";

namespace {

bool parseUint(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t shift = 0;
  std::string digits = text;
  switch (text.back()) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    default: break;
  }
  if (shift) digits.pop_back();
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) return false;
  if (shift && v > (~uint64_t{0} >> shift)) return false;
  *out = v << shift;
  return true;
}

bool parseDtype(const std::string& text, psdp_dtype_t* out) {
  static const std::pair<const char*, psdp_dtype_t> kNames[] = {
      {"bf16", PSDP_BFLOAT16}, {"bfloat16", PSDP_BFLOAT16}, {"fp16", PSDP_FLOAT16}, {"float16", PSDP_FLOAT16},
      {"fp32", PSDP_FLOAT32},  {"float32", PSDP_FLOAT32},   {"fp64", PSDP_FLOAT64}, {"float64", PSDP_FLOAT64},
      {"int8", PSDP_INT8},     {"uint8", PSDP_UINT8}};
  for (const auto& [name, dtype] : kNames) {
    if (text == name) {
      *out = dtype;
      return true;
    }
  }
  return false;
}

size_t PlanOptions::*byteField(const std::string& opt) {
  if (opt == "--chunk") return &PlanOptions::chunk_bytes;
  if (opt == "--align") return &PlanOptions::align_bytes;
  if (opt == "--pad") return &PlanOptions::pad_bytes;
  if (opt == "--state-bytes") return &PlanOptions::state_bytes;
  return nullptr;
}

// One option that takes a value; false with *error set when the value is bad.
bool applyOption(const std::string& opt, const std::string& value, PlanCommand* cmd, std::string* error) {
  uint64_t n = 0;
  PlanOptions& p = cmd->plan;
  bool ok = true;
  if (opt == "--model") {
    cmd->model_path = value;
  } else if (opt == "--name") {
    cmd->model_name = value;
  } else if (opt == "--world" || opt == "--group") {
    ok = parseUint(value, &n) && n >= 1 && n <= 1u << 30;
    (opt == "--world" ? p.world_size : p.group_size) = static_cast<int>(n);
  } else if (size_t PlanOptions::*field = byteField(opt)) {
    ok = parseUint(value, &n);
    p.*field = n;
  } else if (opt == "--level") {
    ok = value == "group" || value == "world" || value == "both";
    p.levels.clear();
    if (value != "world") p.levels.push_back(PSDP_SHARD_LEVEL_GROUP);
    if (value != "group") p.levels.push_back(PSDP_SHARD_LEVEL_WORLD);
  } else if (opt == "--param-dtype") {
    ok = parseDtype(value, &p.param_dtype);
  } else if (opt == "--grad-dtype") {
    p.with_grads = value != "none";
    ok = !p.with_grads || parseDtype(value, &p.grad_dtype);
  } else {
    *error = "unknown option " + opt;
    return false;
  }
  if (!ok) *error = "bad value '" + value + "' for " + opt;
  return ok;
}

}  // namespace

std::optional<PlanCommand> parsePlanCommand(const std::vector<std::string>& args, std::string* error) {
  PlanCommand cmd;
  cmd.plan.world_size = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      cmd.json = true;
    } else if (a == "--per-rank") {
      cmd.per_rank = true;
    } else if (a == "-h" || a == "--help") {
      cmd.help = true;
      return cmd;
    } else if (i + 1 < args.size()) {
      if (!applyOption(a, args[++i], &cmd, error)) return std::nullopt;
    } else {
      *error = a.rfind("--", 0) == 0 ? "option " + a + " needs a value (or is unknown)" : "unexpected argument " + a;
      return std::nullopt;
    }
  }
  if (cmd.model_path.empty() || cmd.plan.world_size == 0) {
    *error = "--model and --world are required";
    return std::nullopt;
  }
  return cmd;
}

}  // namespace psdp::tools
