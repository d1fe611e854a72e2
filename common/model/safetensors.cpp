#include "common/model/safetensors.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "common/durable/durable_file.hpp"

namespace spotlight::model {
namespace {

using Json = nlohmann::json;

const std::map<std::string, at::ScalarType>& dtype_names() {
  static const std::map<std::string, at::ScalarType> names{
      {"F32", at::kFloat}, {"F64", at::kDouble}, {"F16", at::kHalf}, {"BF16", at::kBFloat16},
      {"I64", at::kLong},  {"I32", at::kInt},    {"U8", at::kByte},  {"BOOL", at::kBool}};
  return names;
}

std::string dtype_name(at::ScalarType type) {
  for (const auto& [name, t] : dtype_names()) {
    if (t == type) return name;
  }
  throw CheckpointError(std::string("safetensors: unsupported dtype ") + c10::toString(type));
}

}  // namespace

std::string encode_safetensors(const TensorFile& file) {
  Json header = Json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::vector<at::Tensor> contiguous;
  size_t offset = 0;
  for (const auto& [name, tensor] : file.tensors) {
    auto t = tensor.detach().to(at::kCPU).contiguous();
    const size_t bytes = t.numel() * t.element_size();
    header[name] = {{"dtype", dtype_name(t.scalar_type())},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    contiguous.push_back(t);
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // align the data section to 8 bytes
  std::string out(8, '\0');
  const uint64_t length = json.size();
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  out += json;
  out.reserve(out.size() + offset);
  for (const auto& t : contiguous) {
    out.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  }
  return out;
}

TensorFile decode_safetensors(const std::string& bytes) {
  if (bytes.size() < 8)
    throw CheckpointError("safetensors: file shorter than its 8-byte header length");
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  if (length > bytes.size() - 8)
    throw CheckpointError("safetensors: header length exceeds file size");
  Json header;
  try {
    header = Json::parse(bytes.substr(8, length));
  } catch (const Json::exception& e) {
    throw CheckpointError(std::string("safetensors: header is not valid JSON: ") + e.what());
  }
  const size_t data_start = 8 + length;
  const size_t data_size = bytes.size() - data_start;
  TensorFile file;
  for (const auto& [name, entry] : header.items()) {
    try {
      if (name == "__metadata__") {
        for (const auto& [k, v] : entry.items())
          file.metadata[k] = v.get<std::string>();
        continue;
      }
      const auto type_it = dtype_names().find(entry.at("dtype").get<std::string>());
      if (type_it == dtype_names().end()) {
        throw CheckpointError("safetensors: tensor '" + name + "' has unsupported dtype " +
                              entry.at("dtype").dump());
      }
      const auto shape = entry.at("shape").get<std::vector<int64_t>>();
      const auto offsets = entry.at("data_offsets").get<std::vector<size_t>>();
      auto tensor = torch::empty(shape, torch::TensorOptions().dtype(type_it->second));
      const size_t bytes_needed = tensor.numel() * tensor.element_size();
      if (offsets.size() != 2 || offsets[1] < offsets[0] || offsets[1] > data_size ||
          offsets[1] - offsets[0] != bytes_needed) {
        throw CheckpointError("safetensors: tensor '" + name + "' has bad data_offsets");
      }
      std::memcpy(tensor.data_ptr(), bytes.data() + data_start + offsets[0], bytes_needed);
      file.tensors.emplace(name, tensor);
    } catch (const Json::exception& e) {
      throw CheckpointError("safetensors: tensor '" + name + "': " + e.what());
    }
  }
  return file;
}

void save_safetensors(const std::filesystem::path& path, const TensorFile& file) {
  durable::write_file(path, encode_safetensors(file));
}

TensorFile load_safetensors(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw CheckpointError("safetensors: cannot open " + path.string() + ": " +
                          std::strerror(errno));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return decode_safetensors(buffer.str());
}

TensorFile module_state(const torch::nn::Module& module) {
  TensorFile file;
  for (const auto& item : module.named_parameters(true))
    file.tensors[item.key()] = item.value();
  for (const auto& item : module.named_buffers(true))
    file.tensors[item.key()] = item.value();
  return file;
}

void load_module_state(torch::nn::Module& module, const TensorFile& file) {
  torch::NoGradGuard no_grad;
  auto copy = [&](const std::string& name, at::Tensor& target) {
    auto it = file.tensors.find(name);
    if (it == file.tensors.end())
      throw CheckpointError("checkpoint: tensor '" + name + "' missing");
    if (it->second.sizes() != target.sizes()) {
      std::ostringstream msg;
      msg << "checkpoint: tensor '" << name << "' has shape " << it->second.sizes()
          << ", the model expects " << target.sizes();
      throw CheckpointError(msg.str());
    }
    target.copy_(it->second);
  };
  for (auto& item : module.named_parameters(true))
    copy(item.key(), item.value());
  for (auto& item : module.named_buffers(true))
    copy(item.key(), item.value());
}

}  // namespace spotlight::model
