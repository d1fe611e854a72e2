#include "common/task/prompt_file.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/task/errors.hpp"

namespace spotlight::task {
namespace {

using Json = nlohmann::json;

std::vector<std::string> read_split(const Json& root, const char* split,
                                    const std::string& origin) {
  const auto fail = [&](const std::string& what) {
    throw TaskError("prompt file " + origin + ": '" + split + "' " + what);
  };
  if (!root.contains(split)) fail("is missing");
  const Json& list = root.at(split);
  if (!list.is_array()) fail("must be a list of prompts");
  std::vector<std::string> out;
  out.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string() || list[i].get<std::string>().empty()) {
      fail("[" + std::to_string(i) + "] must be a non-empty string");
    }
    out.push_back(list[i].get<std::string>());
  }
  return out;
}

}  // namespace

PromptFile PromptFile::load(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw TaskError("prompt file " + path.string() + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path.string());
}

PromptFile PromptFile::parse(const std::string& json, const std::string& origin) {
  Json root;
  try {
    root = Json::parse(json);
  } catch (const Json::exception& e) {
    throw TaskError("prompt file " + origin + ": not JSON (" + e.what() + ")");
  }
  if (!root.is_object() || root.value("format", "") != kPromptFileFormat) {
    throw TaskError("prompt file " + origin + ": not a '" + kPromptFileFormat +
                    "' file (tools/encode_prompts.py writes one)");
  }
  if (!root.contains("version") || !root["version"].is_number_integer() ||
      root["version"].get<int>() != kPromptFileVersion) {
    throw TaskError("prompt file " + origin + ": version must be " +
                    std::to_string(kPromptFileVersion));
  }
  PromptFile file;
  file.train_ = read_split(root, "train", origin);
  file.validation_ = read_split(root, "validation", origin);
  if (file.train_.empty()) throw TaskError("prompt file " + origin + ": 'train' is empty");
  return file;
}

Prompt PromptFile::sample(uint64_t seed) const {
  return free_text_prompt(train_[seed % train_.size()]);
}

std::vector<Prompt> PromptFile::validation(int n) const {
  if (n < 0) throw TaskError("prompt file: validation count must be >= 0");
  std::vector<Prompt> out;
  for (std::size_t i = 0; i < validation_.size() && static_cast<int>(i) < n; ++i) {
    out.push_back(free_text_prompt(validation_[i]));
  }
  return out;
}

}  // namespace spotlight::task
