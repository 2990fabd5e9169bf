#include "step_options.h"

#include <cstdlib>
#include <cstring>

#include "perf_options.h"

namespace psdp::perf {
namespace {

bool parseDouble(const char* text, double lo, double hi, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

}  // namespace

const char* stepUsage() {
  return "usage: psdp-perf step [options]   (under psdp-run: psdp-run -n 2 -- psdp-perf step)\n"
         "  A whole sharded training step of a model-shaped state (psdp_step_begin to psdp_step_end),\n"
         "  pipelined against bulk mode in the same run, with the optimizer on the owned pieces.\n"
         "  --model FILE        shape file (default: the installed qwen2.5.json)\n"
         "  --name NAME         model in the file (default Qwen2.5-0.5B)\n"
         "  --scale F           each tensor's leading dimension times F (0 < F <= 1) to fit more ranks\n"
         "  --bytes N           one tensor of N bytes instead of a model\n"
         "  --per-tensor        register a buffer per tensor (default: one flat buffer, as Megatron and DeepSpeed)\n"
         "  --chunk-bytes N     plan chunk size (default: the plan's, 64M)\n"
         "  --window N          reduce and gather windows (default 2; 0: the tuning file's engine rule, else 2)\n"
         "  --grouping N        plan chunks per transfer, pipelined (default 1; 0: the tuning file's rule, else 1)\n"
         "  --fragment N        fragment of the step's ring transfers (default 0: the tuning file's engine rule,\n"
         "                      else the collectives' own, PSDP_FRAGMENT_BYTES)\n"
         "  --group G           shard group size (default: every rank)\n"
         "  --level group|world sharding level (default group)\n"
         "  --iters N           timed steps per mode (default 5); --warmup N (default 1)\n"
         "  --mode both|pipelined|bulk\n"
         "  --bulk-plan whole|chunked  bulk steps on a plan of one chunk per space, each rank owning one\n"
         "                      contiguous piece as ZeRO-2 lays it out (whole, the default: in place), or on the\n"
         "                      pipelined plan (chunked: a rank's pieces of every chunk are packed)\n"
         "  --gather-order backward|forward  gathers in the reductions' order (backward, the default: each\n"
         "                      chunk gathered soon after its update), or from chunk 0 as a next forward pass\n"
         "                      needs them (psdp's default, for a step whose gathers overlap that forward)\n"
         "  --optimizer adam|sgd (default adam)\n"
         "  --precision fp32|bf16  bf16: bfloat16 parameters and gradients, float32 master weights in the\n"
         "                      optimizer state and a float32 gradient shard psdp delivers into (default fp32)\n"
         "  --partials float32|bf16  with bf16: psdp's partial sums (default float32: 4 bytes per element on the\n"
         "                      wire; bf16: 2 bytes, each combine rounded)\n"
         "  --backward-ms T     spread the gradient reports over T ms, as a backward pass would\n"
         "  --update-during-backward  update reduced chunks between backward's buckets (default: after\n"
         "                      backward, as an eager framework's optimizer step follows its backward)\n"
         "  --shared            buffers from psdp_mem_alloc (default: private, huge-page advised)\n"
         "  --online            online tuning: before the timed steps, pipelined steps run until the engine has\n"
         "                      chosen the windows, grouping and fragment not given (which then default to\n"
         "                      the engine's choice); each step is printed; the timed pipelined and comm-only\n"
         "                      steps keep the choice\n"
         "  --online-out FILE   with --online: write the choice as a tuning file for this interconnect\n"
         "  --trace FILE        Chrome trace-event JSON of one pipelined step, every rank (open in Perfetto)\n"
         "  -J FILE             results as JSON\n";
}

bool parseStepOptions(int argc, char** argv, int first, StepOptions* o, std::string* error) {
  auto bad = [&](const std::string& what) {
    *error = what;
    return false;
  };
  bool window_given = false, grouping_given = false;
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      o->help = true;
      continue;
    }
    if (a == "--per-tensor") {
      o->per_tensor = true;
      continue;
    }
    if (a == "--update-during-backward") {
      o->update_during_backward = true;
      continue;
    }
    if (a == "--shared") {
      o->shared_buffers = true;
      continue;
    }
    if (a == "--online") {
      o->online = true;
      continue;
    }
    if (i + 1 >= argc) return bad(a + ": expected a value (psdp-perf step --help lists the options)");
    const char* v = argv[++i];
    size_t size = 0;
    if (a == "--model") {
      o->model_path = v;
    } else if (a == "--name") {
      o->model_name = v;
    } else if (a == "--scale") {
      if (!parseDouble(v, 1e-6, 1.0, &o->scale)) return bad("--scale: expected a number in (0, 1]");
    } else if (a == "--bytes") {
      if (!parseSize(v, &o->bytes) || o->bytes < 4) return bad("--bytes: expected a size of at least 4 bytes");
    } else if (a == "--chunk-bytes") {
      if (!parseSize(v, &o->chunk_bytes) || o->chunk_bytes == 0) return bad("--chunk-bytes: expected a size");
    } else if (a == "--window") {
      if (!parseSize(v, &size)) return bad("--window: expected a count of chunks");
      o->window = size;
      window_given = true;
    } else if (a == "--grouping") {
      if (!parseSize(v, &size)) return bad("--grouping: expected a count of chunks");
      o->grouping = size;
      grouping_given = true;
    } else if (a == "--fragment") {
      if (!parseSize(v, &o->fragment) || (o->fragment != 0 && o->fragment < 64)) {
        return bad("--fragment: expected a size of at least 64 bytes (0: the engine's)");
      }
    } else if (a == "--group") {
      if (!parseInt(v, 1, 1 << 20, &o->group)) return bad("--group: expected a group size of at least 1");
    } else if (a == "--level") {
      if (std::strcmp(v, "group") != 0 && std::strcmp(v, "world") != 0) return bad("--level: expected group or world");
      o->world_level = std::strcmp(v, "world") == 0;
    } else if (a == "--iters") {
      if (!parseInt(v, 1, 1000000, &o->iters)) return bad("--iters: expected a count of at least 1");
    } else if (a == "--warmup") {
      if (!parseInt(v, 0, 1000000, &o->warmup)) return bad("--warmup: expected a count");
    } else if (a == "--mode") {
      const std::string m = v;
      if (m != "both" && m != "pipelined" && m != "bulk") return bad("--mode: expected both, pipelined or bulk");
      o->pipelined = m != "bulk";
      o->bulk = m != "pipelined";
    } else if (a == "--gather-order") {
      if (std::strcmp(v, "forward") != 0 && std::strcmp(v, "backward") != 0) {
        return bad("--gather-order: expected backward or forward");
      }
      o->gather_forward = std::strcmp(v, "forward") == 0;
    } else if (a == "--bulk-plan") {
      if (std::strcmp(v, "whole") != 0 && std::strcmp(v, "chunked") != 0) {
        return bad("--bulk-plan: expected whole or chunked");
      }
      o->bulk_chunked = std::strcmp(v, "chunked") == 0;
    } else if (a == "--optimizer") {
      if (std::strcmp(v, "adam") != 0 && std::strcmp(v, "sgd") != 0) return bad("--optimizer: expected adam or sgd");
      o->adam = std::strcmp(v, "adam") == 0;
    } else if (a == "--precision") {
      if (std::strcmp(v, "fp32") != 0 && std::strcmp(v, "bf16") != 0) return bad("--precision: expected fp32 or bf16");
      o->mixed = std::strcmp(v, "bf16") == 0;
    } else if (a == "--partials") {
      if (std::strcmp(v, "float32") != 0 && std::strcmp(v, "bf16") != 0) {
        return bad("--partials: expected float32 or bf16");
      }
      o->bf16_partials = std::strcmp(v, "bf16") == 0;
    } else if (a == "--backward-ms") {
      if (!parseDouble(v, 0, 1e7, &o->backward_ms)) return bad("--backward-ms: expected milliseconds");
    } else if (a == "--online-out") {
      o->online_out = v;
    } else if (a == "--trace") {
      o->trace_path = v;
    } else if (a == "-J") {
      o->json_path = v;
    } else {
      return bad("unknown option '" + a + "' (psdp-perf step --help lists the options)");
    }
  }
  if (o->bytes != 0 && !o->model_path.empty()) return bad("--bytes and --model: choose one");
  if (o->bf16_partials && !o->mixed) return bad("--partials bf16: only with --precision bf16");
  if (!o->online_out.empty() && !o->online) return bad("--online-out: only with --online");
  if (o->online && !o->pipelined) return bad("--online: tunes pipelined steps (--mode both or pipelined)");
  if (o->online) {
    if (!window_given) o->window = 0;
    if (!grouping_given) o->grouping = 0;
  }
  return true;
}

}  // namespace psdp::perf
