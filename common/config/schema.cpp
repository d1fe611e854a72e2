#include "common/config/schema.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "common/config/format.hpp"

namespace spotlight::config {
namespace {

bool valid_key(std::string_view key) {
  if (key.empty() || key.front() == '.' || key.back() == '.') return false;
  char previous = '.';
  for (char c : key) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!word && c != '.') return false;
    if (c == '.' && previous == '.') return false;
    previous = c;
  }
  return true;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

[[noreturn]] void schema_error(const std::string& key, const std::string& what) {
  throw std::invalid_argument("config schema: '" + key + "' " + what);
}

}  // namespace

std::string_view to_string(ValueType type) {
  switch (type) {
    case ValueType::kInt:
      return "int";
    case ValueType::kDouble:
      return "double";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kStringList:
      return "string list";
    case ValueType::kDoubleList:
      return "double list";
  }
  return "?";
}

ValueType type_of(const Value& value) {
  return static_cast<ValueType>(value.index());
}

std::string format_value(const Value& value) {
  return format_value(value, detail::quote);
}

std::string format_value(const Value& value, std::string (*quote_string)(std::string_view)) {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return detail::format_double(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return quote_string(v);
        } else {
          std::string out = "[";
          for (std::size_t i = 0; i < v.size(); ++i) {
            if (i > 0) out += ", ";
            if constexpr (std::is_same_v<T, std::vector<std::string>>) {
              out += quote_string(v[i]);
            } else {
              out += detail::format_double(v[i]);
            }
          }
          return out + "]";
        }
      },
      value);
}

// --- Entry -------------------------------------------------------------------------------------

Entry::Entry(std::string key, Value default_value, std::string doc)
    : key_(std::move(key)), default_(std::move(default_value)), doc_(std::move(doc)) {}

Entry Entry::integer(std::string key, std::int64_t default_value, std::string doc) {
  return Entry(std::move(key), Value(default_value), std::move(doc));
}
Entry Entry::real(std::string key, double default_value, std::string doc) {
  return Entry(std::move(key), Value(default_value), std::move(doc));
}
Entry Entry::boolean(std::string key, bool default_value, std::string doc) {
  return Entry(std::move(key), Value(default_value), std::move(doc));
}
Entry Entry::string(std::string key, std::string default_value, std::string doc) {
  return Entry(std::move(key), Value(std::move(default_value)), std::move(doc));
}
Entry Entry::string_list(std::string key, std::vector<std::string> default_value, std::string doc) {
  return Entry(std::move(key), Value(std::move(default_value)), std::move(doc));
}
Entry Entry::double_list(std::string key, std::vector<double> default_value, std::string doc) {
  return Entry(std::move(key), Value(std::move(default_value)), std::move(doc));
}

Entry& Entry::add_numeric(std::string must, std::string brief, std::function<bool(double)> ok) {
  const ValueType t = type();
  if (t != ValueType::kInt && t != ValueType::kDouble && t != ValueType::kDoubleList) {
    schema_error(key_, "is a " + std::string(to_string(t)) + ": numeric rule '" + brief +
                           "' does not apply");
  }
  rules_.push_back({std::move(must), std::move(brief), [ok = std::move(ok)](const Value& v) {
                      if (const auto* i = std::get_if<std::int64_t>(&v)) {
                        return ok(static_cast<double>(*i));
                      }
                      if (const auto* d = std::get_if<double>(&v)) return ok(*d);
                      const auto& list = std::get<std::vector<double>>(v);
                      return std::all_of(list.begin(), list.end(), ok);
                    }});
  return *this;
}

Entry& Entry::range(double lo, double hi) {
  if (!(lo <= hi)) schema_error(key_, "has an empty range");
  const std::string text =
      "in [" + detail::format_number(lo) + ", " + detail::format_number(hi) + "]";
  return add_numeric("must be " + text, text, [lo, hi](double v) { return v >= lo && v <= hi; });
}

Entry& Entry::at_least(double lo) {
  const std::string text = ">= " + detail::format_number(lo);
  return add_numeric("must be " + text, text, [lo](double v) { return v >= lo; });
}

Entry& Entry::positive() {
  return add_numeric("must be > 0", "> 0", [](double v) { return v > 0; });
}

Entry& Entry::one_of(std::vector<std::string> choices) {
  const ValueType t = type();
  if (t != ValueType::kString && t != ValueType::kStringList) {
    schema_error(key_, "is a " + std::string(to_string(t)) + ": one_of does not apply");
  }
  if (choices.empty()) schema_error(key_, "has an empty one_of");
  std::string joined;
  for (const auto& c : choices)
    joined += (joined.empty() ? "" : "|") + c;
  auto ok = [choices = std::move(choices)](const Value& v) {
    auto allowed = [&](const std::string& s) {
      return std::find(choices.begin(), choices.end(), s) != choices.end();
    };
    if (const auto* s = std::get_if<std::string>(&v)) return allowed(*s);
    const auto& list = std::get<std::vector<std::string>>(v);
    return std::all_of(list.begin(), list.end(), allowed);
  };
  rules_.push_back({"must be one of " + joined, "one of " + joined, std::move(ok)});
  return *this;
}

Entry& Entry::non_empty() {
  const ValueType t = type();
  if (t != ValueType::kString && t != ValueType::kStringList && t != ValueType::kDoubleList) {
    schema_error(key_, "is a " + std::string(to_string(t)) + ": non_empty does not apply");
  }
  rules_.push_back({"must not be empty", "not empty", [](const Value& v) {
                      return std::visit(
                          [](const auto& x) {
                            using T = std::decay_t<decltype(x)>;
                            if constexpr (std::is_arithmetic_v<T>) {
                              return true;
                            } else {
                              return !x.empty();
                            }
                          },
                          v);
                    }});
  return *this;
}

Entry& Entry::check(std::string must, std::function<bool(const Value&)> ok) {
  if (!ok) schema_error(key_, "has an empty check");
  std::string brief = must;
  rules_.push_back({std::move(must), std::move(brief), std::move(ok)});
  return *this;
}

Entry& Entry::required() {
  required_ = true;
  return *this;
}

std::string Entry::rules() const {
  std::string out;
  for (const auto& r : rules_)
    out += (out.empty() ? "" : "; ") + r.brief;
  return out;
}

std::optional<std::string> Entry::validate(const Value& value) const {
  for (const auto& r : rules_) {
    if (!r.ok(value)) return r.must;
  }
  return std::nullopt;
}

// --- Schema ------------------------------------------------------------------------------------

Schema::Schema(std::initializer_list<Entry> entries) {
  for (const auto& e : entries)
    add(e);
}

Schema& Schema::add(Entry entry) {
  const std::string& key = entry.key();
  if (!valid_key(key)) {
    schema_error(key, "is not a valid key (dot-separated segments of [a-z0-9_])");
  }
  if (index_.count(key) != 0) schema_error(key, "is declared twice");
  if (sections_.count(key) != 0) schema_error(key, "is both a key and a section");
  for (std::size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) {
    if (index_.count(std::string_view(key).substr(0, dot)) != 0) {
      schema_error(key, "is under '" + key.substr(0, dot) + "', which is a key");
    }
  }
  const Value& def = entry.default_value();
  auto finite = [](double d) { return std::isfinite(d); };
  if (const auto* d = std::get_if<double>(&def); d != nullptr && !finite(*d)) {
    schema_error(key, "has a non-finite default");
  }
  if (const auto* l = std::get_if<std::vector<double>>(&def);
      l != nullptr && !std::all_of(l->begin(), l->end(), finite)) {
    schema_error(key, "has a non-finite default");
  }
  if (!entry.is_required()) {
    if (auto failed = entry.validate(def)) {
      schema_error(key, "default " + format_value(def) + " fails its rule: " + *failed);
    }
  }
  for (std::size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) {
    ++sections_[key.substr(0, dot)];
  }
  index_.emplace(key, entries_.size());
  entries_.push_back(std::move(entry));
  return *this;
}

Schema& Schema::add(const Schema& other) {
  for (const auto& e : other.entries_)
    add(e);
  return *this;
}

const Entry* Schema::find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

bool Schema::is_section(std::string_view prefix) const {
  return sections_.count(prefix) != 0;
}

std::optional<std::string> Schema::suggest(std::string_view key) const {
  std::optional<std::string> best;
  std::size_t best_distance = 3;
  for (const auto& [candidate, index] : index_) {
    const std::size_t d = edit_distance(key, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string Schema::help() const {
  std::ostringstream out;
  out << "Configuration keys (YAML file via --config FILE; override with --set KEY=VALUE):\n";
  for (const auto& [key, index] : index_) {
    const Entry& e = entries_[index];
    out << "  " << key << " (" << to_string(e.type()) << ")";
    if (e.is_required()) {
      out << " required";
    } else {
      out << " default: " << format_value(e.default_value());
    }
    const std::string rules = e.rules();
    if (!rules.empty()) out << "; " << rules;
    out << "\n";
    if (!e.doc().empty()) out << "      " << e.doc() << "\n";
  }
  return out.str();
}

}  // namespace spotlight::config
