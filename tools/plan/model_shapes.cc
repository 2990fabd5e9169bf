#include "model_shapes.h"

#include <fstream>
#include <sstream>

#include "json_reader.h"

namespace psdp::tools {
namespace {

bool readTensor(const JsonValue& t, size_t index, TensorShape* out, std::string* error) {
  const JsonValue* name = t.find("name");
  const JsonValue* shape = t.find("shape");
  const std::string where = "tensors[" + std::to_string(index) + "]";
  if (name == nullptr || name->kind != JsonValue::Kind::kString || shape == nullptr ||
      shape->kind != JsonValue::Kind::kArray || shape->items.empty()) {
    *error = where + ": needs a \"name\" string and a non-empty \"shape\" array";
    return false;
  }
  out->name = name->text;
  out->numel = 1;
  for (const JsonValue& d : shape->items) {
    std::optional<uint64_t> v = d.asUint();
    if (!v || *v == 0 || __builtin_mul_overflow(out->numel, *v, &out->numel)) {
      *error = where + " '" + out->name + "': dimensions must be positive integers whose product fits 64 bits";
      return false;
    }
    out->shape.push_back(*v);
  }
  return true;
}

std::string modelList(const JsonValue& models) {
  std::string names;
  for (const auto& [name, value] : models.members) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace

std::optional<ModelShapes> parseModelShapes(const std::string& text, const std::string& model, std::string* error) {
  std::optional<JsonValue> doc = parseJson(text, error);
  if (!doc) return std::nullopt;
  ModelShapes out;
  const JsonValue* entry = &*doc;
  if (const JsonValue* models = doc->find("models"); models != nullptr && models->kind == JsonValue::Kind::kObject) {
    if (model.empty() && models->members.size() != 1) {
      *error = "the file holds several models, choose one with --name: " + modelList(*models);
      return std::nullopt;
    }
    entry = model.empty() ? &models->members.front().value : models->find(model);
    if (entry == nullptr) {
      *error = "no model '" + model + "' in the file; it has: " + modelList(*models);
      return std::nullopt;
    }
    out.name = model.empty() ? models->members.front().key : model;
  }
  const JsonValue* tensors = entry->find("tensors");
  if (tensors == nullptr || tensors->kind != JsonValue::Kind::kArray || tensors->items.empty()) {
    *error = "no \"tensors\" array (or an empty one)";
    return std::nullopt;
  }
  for (size_t i = 0; i < tensors->items.size(); ++i) {
    out.tensors.emplace_back();
    if (!readTensor(tensors->items[i], i, &out.tensors.back(), error)) return std::nullopt;
  }
  return out;
}

std::optional<ModelShapes> loadModelShapes(const std::string& path, const std::string& model, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open " + path;
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::optional<ModelShapes> shapes = parseModelShapes(text.str(), model, error);
  if (!shapes) *error = path + ": " + *error;
  return shapes;
}

}  // namespace psdp::tools
