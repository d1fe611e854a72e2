#pragma once
// Checkpoints in the safetensors layout (8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}, "__metadata__": {string: string}}, raw little-endian
// tensor bytes), so other tools (Python's safetensors, HF loaders) read them unchanged.

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include <ATen/core/Tensor.h>

namespace torch::nn {
class Module;
}

namespace spotlight::model {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TensorFile {
  std::map<std::string, at::Tensor> tensors;  // on the CPU
  std::map<std::string, std::string> metadata;
};

std::string encode_safetensors(const TensorFile& file);
TensorFile decode_safetensors(
    const std::string& bytes);  // throws CheckpointError naming the problem

// Writes atomically and durably (durable::write_file: temporary file, fsync, rename, fsync of the
// directory): a crash never leaves a torn checkpoint; failures throw durable::WriteError.
void save_safetensors(const std::filesystem::path& path, const TensorFile& file);
TensorFile load_safetensors(const std::filesystem::path& path);

// A module's parameters and buffers by their dotted names.
TensorFile module_state(const torch::nn::Module& module);
// Copies every parameter and buffer of `module` from `file`; a missing tensor or a shape mismatch
// throws CheckpointError naming the tensor. Extra tensors in the file are ignored.
void load_module_state(torch::nn::Module& module, const TensorFile& file);

}  // namespace spotlight::model
