// The configuration schema of one service: a table of keys, each holding its type, default,
// documentation and validation together (Redis's static_configs[], userver's static config
// schema with additionalProperties: false).
//
//   const config::Schema& explorer_schema() {
//     static const config::Schema schema{
//         config::Entry::string("exploration.mode", "async", "Where seed exploration runs.")
//             .one_of({"none", "sync", "async"}),
//         config::Entry::integer("sampler.steps", 10, "SDE steps per sample.").range(1, 1000),
//         config::Entry::real("trainer.lr", 1e-4, "Adam learning rate.").positive(),
//         config::Entry::string("run.id", "", "Run identifier.").required(),
//     };
//     return schema;
//   }
//
// Keys are dotted paths of lowercase segments ([a-z0-9_]+); in YAML they are nested maps
// (`trainer: {lr: 1e-4}`). A key can not also be a section ("trainer" and "trainer.lr").
// Mistakes in a schema (bad key, duplicate, a default its own validators reject) are
// programming errors and throw std::invalid_argument when the entry is added.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace spotlight::config {

enum class ValueType { kInt, kDouble, kBool, kString, kStringList, kDoubleList };

// Index order matches ValueType.
using Value = std::variant<std::int64_t, double, bool, std::string, std::vector<std::string>,
                           std::vector<double>>;

// "int", "double", "bool", "string", "string list", "double list".
std::string_view to_string(ValueType type);
ValueType type_of(const Value& value);
// A value as written in YAML/help: 3, 0.0001, true, async, [a, b], [0.5, 1.0]. Strings, alone or
// in a list, go through `quote_string` (the one-argument form: detail::quote).
std::string format_value(const Value& value);
std::string format_value(const Value& value, std::string (*quote_string)(std::string_view));

// One key of a schema. Build with the named constructors and chain validators.
class Entry {
 public:
  static Entry integer(std::string key, std::int64_t default_value, std::string doc);
  static Entry real(std::string key, double default_value, std::string doc);
  static Entry boolean(std::string key, bool default_value, std::string doc);
  static Entry string(std::string key, std::string default_value, std::string doc);
  static Entry string_list(std::string key, std::vector<std::string> default_value,
                           std::string doc);
  static Entry double_list(std::string key, std::vector<double> default_value, std::string doc);

  // Validators; every one added must pass. Numeric ones apply to int, double and to each element
  // of a double list; one_of to a string and each element of a string list. Using one on a type
  // it does not apply to throws std::invalid_argument.
  Entry& range(double lo, double hi);               // lo <= v <= hi: "must be in [lo, hi]"
  Entry& at_least(double lo);                       // "must be >= lo"
  Entry& positive();                                // "must be > 0"
  Entry& one_of(std::vector<std::string> choices);  // "must be one of a|b|c"
  Entry& non_empty();                               // strings and lists: "must not be empty"
  // Custom rule: `ok(value)` false fails with "'<key>' <must>, got <value>", so `must` reads
  // like "must be a power of two".
  Entry& check(std::string must, std::function<bool(const Value&)> ok);
  // No usable default: loading fails unless the file or a --set gives a value.
  Entry& required();

  const std::string& key() const { return key_; }
  ValueType type() const { return type_of(default_); }
  const Value& default_value() const { return default_; }
  const std::string& doc() const { return doc_; }
  bool is_required() const { return required_; }
  // "in [1, 1000]; one of a|b" — the rules, for help().
  std::string rules() const;
  // std::nullopt when `value` (of this entry's type) passes every validator, else the failed
  // rule as "must ...".
  std::optional<std::string> validate(const Value& value) const;

 private:
  struct Rule {
    std::string must;   // "must be in [1, 1000]"
    std::string brief;  // "in [1, 1000]" (for help)
    std::function<bool(const Value&)> ok;
  };
  Entry(std::string key, Value default_value, std::string doc);
  Entry& add_numeric(std::string must, std::string brief, std::function<bool(double)> ok);

  std::string key_;
  Value default_;
  std::string doc_;
  bool required_ = false;
  std::vector<Rule> rules_;
};

class Schema {
 public:
  Schema() = default;
  Schema(std::initializer_list<Entry> entries);

  // Throws std::invalid_argument for a malformed key, a duplicate, a key that is also a section
  // of another key, or a default (of a non-required entry) that fails its own validators.
  Schema& add(Entry entry);
  // Adds every entry of `other` (shared sections such as redis.* or log.*).
  Schema& add(const Schema& other);

  // nullptr when `key` is not a key of the schema.
  const Entry* find(std::string_view key) const;
  // True when `prefix` is a proper prefix section of some key ("trainer" for "trainer.lr").
  bool is_section(std::string_view prefix) const;
  // The known key closest to `key` by edit distance (at most 2 edits), for "did you mean".
  std::optional<std::string> suggest(std::string_view key) const;
  // Entries in the order they were added.
  const std::vector<Entry>& entries() const { return entries_; }

  // Every key, sorted, with type, default, rules and documentation; for --help.
  std::string help() const;

 private:
  std::vector<Entry> entries_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, int, std::less<>> sections_;  // prefix -> number of keys under it
};

}  // namespace spotlight::config
