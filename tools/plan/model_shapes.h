// A model's parameter tensors, read from a shape file such as shared/models/qwen2.5.json:
//   {"models": {"<name>": {"tensors": [{"name": "...", "shape": [d0, d1, ...]}, ...]}, ...}}
// or a single model, {"tensors": [...]}. Tensors keep the file's (module) order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace psdp::tools {

struct TensorShape {
  std::string name;
  std::vector<uint64_t> shape;  // at least one dimension
  uint64_t numel = 0;
};

struct ModelShapes {
  std::string name;
  std::vector<TensorShape> tensors;
};

// The model called `model` in the file at `path` (empty: the file's only model). On failure returns
// nullopt and sets *error (for an unknown or missing name it lists the file's models).
std::optional<ModelShapes> loadModelShapes(const std::string& path, const std::string& model, std::string* error);

// The same from the text of such a file.
std::optional<ModelShapes> parseModelShapes(const std::string& text, const std::string& model, std::string* error);

}  // namespace psdp::tools
