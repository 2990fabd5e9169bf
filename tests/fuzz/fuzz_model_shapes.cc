// Model shape files (psdp-plan --model, psdp-perf step --shapes): the JSON reader and the shape rules. A
// file either gives a model whose tensors all have a shape and a consistent element count, or an error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "model_shapes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string error;
  auto model = psdp::tools::parseModelShapes(text, "", &error);
  PSDP_FUZZ_CHECK(model.has_value() || !error.empty());
  if (model) {
    for (const auto& tensor : model->tensors) {
      PSDP_FUZZ_CHECK(!tensor.shape.empty());
      uint64_t numel = 1;
      bool overflow = false;
      for (uint64_t d : tensor.shape) overflow |= __builtin_mul_overflow(numel, d, &numel);
      PSDP_FUZZ_CHECK(!overflow && numel == tensor.numel);
    }
  }
  return 0;
}
