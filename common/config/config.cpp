#include "common/config/config.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

// Without yaml-cpp (SPOTLIGHT_HAVE_YAML unset: a core-only build on a machine without it),
// configuration comes from --set alone: files and YAML text are a ConfigError saying so, "[a, b]"
// lists are read by a small flow-list reader and dump() writes YAML by hand.
#ifdef SPOTLIGHT_HAVE_YAML
#include <yaml-cpp/yaml.h>
#endif

#include "common/config/format.hpp"

namespace spotlight::config {
namespace {

struct Assigned {
  Value value;
  std::string origin;
};
using Assignments = std::map<std::string, Assigned, std::less<>>;

std::string in(const std::string& origin) {
  return " (in " + origin + ")";
}

[[noreturn]] void unknown_key(const Schema& schema, const std::string& key,
                              const std::string& origin) {
  std::string message = "config: unknown key '" + key + "'" + in(origin);
  if (auto guess = schema.suggest(key)) message += "; did you mean '" + *guess + "'?";
  throw ConfigError(key, message);
}

std::string_view expectation(ValueType type) {
  switch (type) {
    case ValueType::kInt:
      return "must be an integer";
    case ValueType::kDouble:
      return "must be a number";
    case ValueType::kBool:
      return "must be a boolean (true|false)";
    case ValueType::kString:
      return "must be a string";
    case ValueType::kStringList:
      return "must be a list of strings";
    case ValueType::kDoubleList:
      return "must be a list of numbers";
  }
  return "must be valid";
}

[[noreturn]] void type_error(const Entry& entry, const std::string& got,
                             const std::string& origin) {
  throw ConfigError(entry.key(), "config: '" + entry.key() + "' " +
                                     std::string(expectation(entry.type())) + ", got " + got +
                                     in(origin));
}

#ifdef SPOTLIGHT_HAVE_YAML
std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return detail::quote(node.Scalar());
    default:
      return "null";
  }
}

std::string with_line(const std::string& source, const YAML::Mark& mark) {
  return mark.line >= 0 ? source + ":" + std::to_string(mark.line + 1) : source;
}
#endif

// One scalar of the entry's scalar (or element) type from its text; nullopt when malformed.
std::optional<Value> scalar_from_text(ValueType type, std::string_view text) {
  switch (type) {
    case ValueType::kInt:
      if (auto v = detail::parse_int(text)) return Value(*v);
      return std::nullopt;
    case ValueType::kDouble:
    case ValueType::kDoubleList:
      if (auto v = detail::parse_double(text)) return Value(*v);
      return std::nullopt;
    case ValueType::kBool:
      if (auto v = detail::parse_bool(text)) return Value(*v);
      return std::nullopt;
    case ValueType::kString:
    case ValueType::kStringList:
      return Value(std::string(text));
  }
  return std::nullopt;
}

// A list value from element texts, or a type error naming the first bad element.
Value list_from_texts(const Entry& entry, const std::vector<std::string>& items,
                      const std::string& origin) {
  if (entry.type() == ValueType::kStringList) return Value(items);
  std::vector<double> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto v = detail::parse_double(items[i]);
    if (!v) type_error(entry, detail::quote(items[i]) + " at index " + std::to_string(i), origin);
    out.push_back(*v);
  }
  return Value(std::move(out));
}

bool is_list(ValueType type) {
  return type == ValueType::kStringList || type == ValueType::kDoubleList;
}

#ifdef SPOTLIGHT_HAVE_YAML
Value from_node(const Entry& entry, const YAML::Node& node, const std::string& origin) {
  if (is_list(entry.type())) {
    if (!node.IsSequence()) type_error(entry, describe(node), origin);
    std::vector<std::string> items;
    for (std::size_t i = 0; i < node.size(); ++i) {
      const YAML::Node item = node[i];
      if (!item.IsScalar()) {
        type_error(entry, describe(item) + " at index " + std::to_string(i), origin);
      }
      items.push_back(item.Scalar());
    }
    return list_from_texts(entry, items, origin);
  }
  if (!node.IsScalar()) type_error(entry, describe(node), origin);
  auto v = scalar_from_text(entry.type(), node.Scalar());
  if (!v) type_error(entry, describe(node), origin);
  return std::move(*v);
}

YAML::Node parse_yaml(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError("", "config: cannot parse " + with_line(source, e.mark) + ": " + e.msg);
  }
}
#endif

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return std::string(s.substr(first, last - first + 1));
}

#ifndef SPOTLIGHT_HAVE_YAML
[[noreturn]] void no_yaml(const std::string& source) {
  throw ConfigError("", "config: cannot read " + source +
                            ": this build has no YAML support (yaml-cpp was not found when it "
                            "was configured); give every setting with --set key=value");
}

// The items of a flow list of scalars, "[a, 'b c', \"d\"]"; nesting is a type error.
std::vector<std::string> flow_list_items(const Entry& entry, const std::string& text,
                                         const std::string& origin) {
  if (text.size() < 2 || text.back() != ']') type_error(entry, detail::quote(text), origin);
  const std::string inner = trim(std::string_view(text).substr(1, text.size() - 2));
  std::vector<std::string> items;
  if (inner.empty()) return items;
  std::string item;
  char quote = 0;
  bool quoted = false;
  const auto finish = [&] {
    std::string value = quoted ? item : trim(item);
    items.push_back(std::move(value));
    item.clear();
    quoted = false;
  };
  for (std::size_t i = 0; i < inner.size(); ++i) {
    const char c = inner[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        item += c;
      }
    } else if (c == '\'' || c == '"') {
      if (!trim(item).empty()) type_error(entry, detail::quote(text), origin);
      item.clear();
      quote = c;
      quoted = true;
    } else if (c == ',') {
      finish();
    } else if (c == '[' || c == ']' || c == '{' || c == '}') {
      type_error(entry, "a nested collection in " + detail::quote(text), origin);
    } else if (!quoted) {
      item += c;
    } else if (c != ' ' && c != '\t') {
      type_error(entry, detail::quote(text), origin);
    }
  }
  if (quote != 0) type_error(entry, detail::quote(text), origin);
  if (quoted || !trim(item).empty()) finish();  // "[a, b,]": a trailing comma ends the list
  return items;
}

// A YAML double-quoted scalar.
std::string yaml_quoted(std::string_view text) {
  std::string out = "\"";
  for (const unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}
#endif

Value from_override_text(const Entry& entry, const std::string& text, const std::string& origin) {
  if (!is_list(entry.type())) {
    auto v = scalar_from_text(entry.type(), text);
    if (!v) type_error(entry, detail::quote(text), origin);
    return std::move(*v);
  }
  const std::string trimmed = trim(text);
  if (!trimmed.empty() && trimmed.front() == '[') {
#ifdef SPOTLIGHT_HAVE_YAML
    return from_node(entry, parse_yaml(trimmed, origin), origin);
#else
    return list_from_texts(entry, flow_list_items(entry, trimmed, origin), origin);
#endif
  }
  std::vector<std::string> items;
  if (!trimmed.empty()) {
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = trimmed.find(',', start);
      items.push_back(trim(std::string_view(trimmed).substr(
          start, comma == std::string::npos ? std::string::npos : comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return list_from_texts(entry, items, origin);
}

#ifdef SPOTLIGHT_HAVE_YAML
// Applies one YAML document (nested maps) on top of `out`. A key may appear once per document.
void apply_yaml(const Schema& schema, const YAML::Node& root, const std::string& source,
                Assignments& out) {
  if (!root.IsDefined() || root.IsNull()) return;  // empty document
  if (!root.IsMap()) {
    throw ConfigError("", "config: the top level must be a map of keys, got " + describe(root) +
                              in(with_line(source, root.Mark())));
  }
  std::set<std::string> seen;
  // Iterative walk: (node, dotted prefix).
  std::vector<std::pair<YAML::Node, std::string>> pending{{root, ""}};
  while (!pending.empty()) {
    auto [node, prefix] = std::move(pending.back());
    pending.pop_back();
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key_node = it->first;
      const YAML::Node value = it->second;
      const std::string origin = with_line(source, key_node.Mark());
      if (!key_node.IsScalar()) {
        throw ConfigError(prefix, "config: keys must be plain names, got " + describe(key_node) +
                                      (prefix.empty() ? "" : " under '" + prefix + "'") +
                                      in(origin));
      }
      const std::string path =
          prefix.empty() ? key_node.Scalar() : prefix + "." + key_node.Scalar();
      if (const Entry* entry = schema.find(path)) {
        if (!seen.insert(path).second) {
          throw ConfigError(path, "config: '" + path + "' is given twice" + in(origin));
        }
        out[path] = {from_node(*entry, value, origin), origin};
      } else if (schema.is_section(path)) {
        if (value.IsMap()) {
          pending.emplace_back(value, path);
        } else if (!value.IsNull()) {  // `trainer:` with nothing under it is an empty section
          throw ConfigError(path, "config: '" + path + "' is a section and must be a map, got " +
                                      describe(value) + in(origin));
        }
      } else {
        unknown_key(schema, path, origin);
      }
    }
  }
}

#endif

// A regular file of at most kMaxConfigFileBytes: a directory, a device (/dev/zero), a FIFO or a
// huge file is refused before anything is read from it.
std::string read_file(const std::filesystem::path& path) {
  const std::string name = "config file '" + path.string() + "' (--config)";
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (error) throw ConfigError("", "config: cannot read " + name + ": " + error.message());
  if (status.type() != std::filesystem::file_type::regular) {
    throw ConfigError("", "config: " + name + " is not a regular file (" +
                              (status.type() == std::filesystem::file_type::directory
                                   ? std::string("a directory")
                                   : std::string("a device, socket or pipe")) +
                              ")");
  }
  const auto size = std::filesystem::file_size(path, error);
  if (!error && size > kMaxConfigFileBytes) {
    throw ConfigError("", "config: " + name + " is " + std::to_string(size) +
                              " bytes, more than the limit of " +
                              std::to_string(kMaxConfigFileBytes));
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw ConfigError("", "config: cannot read " + name + ": " + std::strerror(errno));
  // Read at most one byte past the limit: the file may have grown since the stat.
  std::string text(kMaxConfigFileBytes + 1, '\0');
  stream.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (stream.bad()) throw ConfigError("", "config: cannot read " + name);
  text.resize(static_cast<size_t>(stream.gcount()));
  if (text.size() > kMaxConfigFileBytes) {
    throw ConfigError("", "config: " + name + " is more than the limit of " +
                              std::to_string(kMaxConfigFileBytes) + " bytes");
  }
  return text;
}

// --- dump ---------------------------------------------------------------------------------------

struct Trie {
  std::map<std::string, Trie> children;
  const Value* value = nullptr;
};

#ifdef SPOTLIGHT_HAVE_YAML
void emit_value(YAML::Emitter& out, const Value& value) {
  std::visit(
      [&out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::int64_t>) {
          out << static_cast<long long>(v);
        } else if constexpr (std::is_same_v<T, double>) {
          out << detail::format_double(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          out << (v ? "true" : "false");
        } else if constexpr (std::is_same_v<T, std::string>) {
          out << YAML::DoubleQuoted << v;
        } else {
          out << YAML::Flow << YAML::BeginSeq;
          for (const auto& item : v) {
            if constexpr (std::is_same_v<T, std::vector<std::string>>) {
              out << YAML::DoubleQuoted << item;
            } else {
              out << detail::format_double(item);
            }
          }
          out << YAML::EndSeq;
        }
      },
      value);
}

void emit_trie(YAML::Emitter& out, const Trie& trie) {
  out << YAML::BeginMap;
  for (const auto& [name, child] : trie.children) {
    out << YAML::Key << name << YAML::Value;
    if (child.value != nullptr) {
      emit_value(out, *child.value);
    } else {
      emit_trie(out, child);
    }
  }
  out << YAML::EndMap;
}
#else
void emit_plain(std::string& out, const Trie& trie, int indent) {
  for (const auto& [name, child] : trie.children) {
    out.append(indent, ' ');
    out += name + ":";
    if (child.value != nullptr) {
      out += " " + format_value(*child.value, yaml_quoted) + "\n";
    } else {
      out += "\n";
      emit_plain(out, child, indent + 2);
    }
  }
}
#endif

}  // namespace

Config Config::load(const Schema& schema, const ConfigSources& sources) {
  Assignments assigned;
#ifdef SPOTLIGHT_HAVE_YAML
  if (sources.file) {
    const std::string source = sources.file->string();
    apply_yaml(schema, parse_yaml(read_file(*sources.file), source), source, assigned);
  }
  if (sources.yaml) {
    apply_yaml(schema, parse_yaml(*sources.yaml, sources.yaml_name), sources.yaml_name, assigned);
  }
#else
  if (sources.file) {
    read_file(*sources.file);  // an unreadable file is named as such first
    no_yaml(sources.file->string());
  }
  if (sources.yaml) no_yaml(sources.yaml_name);
#endif
  for (const std::string& item : sources.overrides) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError("", "config: override '" + item + "' must be KEY=VALUE (in --set)");
    }
    const std::string key = item.substr(0, eq);
    const Entry* entry = schema.find(key);
    if (entry == nullptr) {
      if (schema.is_section(key)) {
        throw ConfigError(key, "config: '" + key + "' is a section, not a key (in --set)");
      }
      unknown_key(schema, key, "--set");
    }
    assigned[key] = {from_override_text(*entry, item.substr(eq + 1), "--set"), "--set"};
  }

  std::map<std::string, Slot, std::less<>> values;
  for (const Entry& entry : schema.entries()) {
    auto it = assigned.find(entry.key());
    if (it == assigned.end()) {
      if (entry.is_required()) {
        throw ConfigError(entry.key(), "config: '" + entry.key() +
                                           "' is required: set it in the config file or with "
                                           "--set " +
                                           entry.key() + "=...");
      }
      values.emplace(entry.key(), Slot{entry.default_value(), "default"});
      continue;
    }
    if (auto failed = entry.validate(it->second.value)) {
      throw ConfigError(entry.key(), "config: '" + entry.key() + "' " + *failed + ", got " +
                                         format_value(it->second.value) + in(it->second.origin));
    }
    values.emplace(entry.key(), Slot{std::move(it->second.value), std::move(it->second.origin)});
  }
  return Config(std::make_shared<const Schema>(schema), std::move(values));
}

const Config::Slot& Config::slot(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    throw ConfigAccessError(std::string(key), "config: no key '" + std::string(key) +
                                                  "' in the schema (programming error)");
  }
  return it->second;
}

void Config::wrong_type(std::string_view key, std::string_view wanted) const {
  const Slot& s = slot(key);
  throw ConfigAccessError(std::string(key), "config: '" + std::string(key) + "' is a " +
                                                std::string(to_string(type_of(s.value))) +
                                                ", read as " + std::string(wanted) +
                                                " (programming error)");
}

const Value& Config::value(std::string_view key) const {
  return slot(key).value;
}

const std::string& Config::origin(std::string_view key) const {
  return slot(key).origin;
}

std::int64_t Config::get_int(std::string_view key) const {
  if (const auto* v = std::get_if<std::int64_t>(&slot(key).value)) return *v;
  wrong_type(key, "int");
}
double Config::get_double(std::string_view key) const {
  if (const auto* v = std::get_if<double>(&slot(key).value)) return *v;
  wrong_type(key, "double");
}
bool Config::get_bool(std::string_view key) const {
  if (const auto* v = std::get_if<bool>(&slot(key).value)) return *v;
  wrong_type(key, "bool");
}
const std::string& Config::get_string(std::string_view key) const {
  if (const auto* v = std::get_if<std::string>(&slot(key).value)) return *v;
  wrong_type(key, "string");
}
const std::vector<std::string>& Config::get_string_list(std::string_view key) const {
  if (const auto* v = std::get_if<std::vector<std::string>>(&slot(key).value)) return *v;
  wrong_type(key, "string list");
}
const std::vector<double>& Config::get_double_list(std::string_view key) const {
  if (const auto* v = std::get_if<std::vector<double>>(&slot(key).value)) return *v;
  wrong_type(key, "double list");
}

std::string Config::dump() const {
  Trie root;
  for (const auto& [key, s] : values_) {
    Trie* node = &root;
    std::size_t start = 0;
    while (true) {
      const std::size_t dot = key.find('.', start);
      node = &node->children[key.substr(start, dot == std::string::npos ? dot : dot - start)];
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    node->value = &s.value;
  }
#ifdef SPOTLIGHT_HAVE_YAML
  YAML::Emitter out;
  if (root.children.empty()) {
    out << YAML::BeginMap << YAML::EndMap;
  } else {
    emit_trie(out, root);
  }
  return std::string(out.c_str()) + "\n";
#else
  if (root.children.empty()) return "{}\n";
  std::string out;
  emit_plain(out, root, 0);
  return out;
#endif
}

}  // namespace spotlight::config
