#include "common/config/arguments.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "common/config/error.hpp"

namespace spotlight::config {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw ConfigError("", message);
}

}  // namespace

ArgumentParser::ArgumentParser(std::string usage) : usage_(std::move(usage)) {}

ArgumentParser& ArgumentParser::option(std::string name, std::string value_name, std::string help,
                                       std::optional<std::string> fallback) {
  if (options_.count(name) != 0 || value_name.empty()) {
    throw std::logic_error("ArgumentParser: option --" + name + " declared twice or without value");
  }
  order_.push_back(name);
  options_[std::move(name)] = Option{std::move(value_name), std::move(help), std::move(fallback)};
  return *this;
}

ArgumentParser& ArgumentParser::repeated(const std::string& name, std::string value_name,
                                         std::string help) {
  option(name, std::move(value_name), std::move(help));
  options_[name].repeatable = true;
  return *this;
}

ArgumentParser& ArgumentParser::flag(std::string name, std::string help) {
  if (options_.count(name) != 0) {
    throw std::logic_error("ArgumentParser: option --" + name + " declared twice");
  }
  order_.push_back(name);
  options_[std::move(name)] = Option{"", std::move(help), std::nullopt};
  return *this;
}

Arguments ArgumentParser::parse(int argc, const char* const* argv) const {
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i)
    words.emplace_back(argv[i] != nullptr ? argv[i] : "");
  return parse(words);
}

Arguments ArgumentParser::parse(const std::vector<std::string>& words) const {
  Arguments out;
  out.options_ = options_;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "--") {
      out.rest_.assign(words.begin() + static_cast<std::ptrdiff_t>(i) + 1, words.end());
      break;
    }
    if (word == "-h" || word == "--help") {
      out.help_ = true;
      continue;
    }
    if (word.size() < 2 || word[0] != '-' || (word.size() > 2 && word[1] != '-')) {
      if (!word.empty() && word[0] == '-' && word != "-") fail("unknown option '" + word + "'");
      out.positional_.push_back(word);
      continue;
    }
    const std::size_t eq = word.find('=');
    const std::string name = word.substr(2, eq == std::string::npos ? eq : eq - 2);
    const auto it = options_.find(name);
    if (it == options_.end()) fail("unknown option '" + word + "'");
    const Option& o = it->second;
    std::string value;
    if (o.value_name.empty()) {
      if (eq != std::string::npos) fail("option --" + name + " takes no value");
      value = "1";
    } else if (eq != std::string::npos) {
      value = word.substr(eq + 1);
    } else if (i + 1 < words.size()) {
      value = words[++i];
    } else {
      fail("option --" + name + " needs a value (" + o.value_name + ")");
    }
    auto& slot = out.values_[name];
    if (!slot.empty() && !o.repeatable) fail("option --" + name + " given twice");
    slot.push_back(std::move(value));
  }
  return out;
}

std::string ArgumentParser::help() const {
  std::string out = usage_;
  if (!out.empty() && out.back() != '\n') out += '\n';
  if (!order_.empty()) out += "Options:\n";
  for (const std::string& name : order_) {
    const Option& o = options_.at(name);
    std::string head = "  --" + name + (o.value_name.empty() ? "" : " " + o.value_name);
    if (head.size() < 24)
      head.resize(24, ' ');
    else
      head += "  ";
    out += head + o.help;
    if (o.fallback) out += " (default " + *o.fallback + ")";
    if (o.repeatable) out += " (repeatable)";
    out += '\n';
  }
  out += "  -h, --help              this help\n";
  return out;
}

const ArgumentParser::Option& Arguments::declared(const std::string& name) const {
  const auto it = options_.find(name);
  if (it == options_.end()) throw std::logic_error("Arguments: option --" + name + " undeclared");
  return it->second;
}

bool Arguments::given(const std::string& name) const {
  declared(name);
  return values_.count(name) != 0;
}

bool Arguments::flag(const std::string& name) const {
  if (!declared(name).value_name.empty()) {
    throw std::logic_error("Arguments: --" + name + " is not a flag");
  }
  return values_.count(name) != 0;
}

std::optional<std::string> Arguments::value(const std::string& name) const {
  const ArgumentParser::Option& o = declared(name);
  if (const auto it = values_.find(name); it != values_.end()) return it->second.back();
  return o.fallback;
}

std::vector<std::string> Arguments::values(const std::string& name) const {
  declared(name);
  const auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Arguments::text(const std::string& name) const {
  auto v = value(name);
  if (!v) fail("option --" + name + " is required");
  return std::move(*v);
}

std::int64_t Arguments::integer(const std::string& name) const {
  const std::string v = text(name);
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) {
    fail("option --" + name + ": '" + v + "' is not an integer");
  }
  return out;
}

double Arguments::real(const std::string& name) const {
  const std::string v = text(name);
  std::size_t used = 0;
  double out = 0;
  try {
    out = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || !std::isfinite(out)) {
    fail("option --" + name + ": '" + v + "' is not a number");
  }
  return out;
}

}  // namespace spotlight::config
