// The effective configuration of one service, validated against its Schema at start.
//
// Layers, later wins: schema defaults < YAML file < YAML text < --set overrides (in order).
// Every key in a layer must be declared by the schema (no unknown keys, no wrong types);
// validators and `required()` are checked on the final values only, so a file may hold a value
// that a --set then corrects.
//
//   auto cmd = config::parse_command_line(argc, argv);
//   config::Config cfg = config::Config::load(trainer_schema(), cmd.sources);
//   double lr = cfg.get<double>("trainer.lr");
//
// A Config is immutable after load(): concurrent reads are safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/config/error.hpp"
#include "common/config/schema.hpp"

namespace spotlight::config {

// The largest configuration file read (the biggest shipped recipe is a few KB).
inline constexpr std::size_t kMaxConfigFileBytes = 1 << 20;

struct ConfigSources {
  // A YAML file of nested maps; unreadable or unparsable files are a ConfigError, and so is
  // anything but a regular file of at most kMaxConfigFileBytes (a directory, /dev/zero).
  std::optional<std::filesystem::path> file;
  // YAML text layered after the file (embedded configs, tests); named `yaml_name` in errors.
  std::optional<std::string> yaml;
  std::string yaml_name = "<yaml>";
  // "dotted.key=value" in order. Strings are taken verbatim; lists are "[a, b]" (YAML flow) or
  // "a,b"; an empty value is an empty list.
  std::vector<std::string> overrides;
};

class Config {
 public:
  // Throws ConfigError naming the first offending key and where its value came from.
  static Config load(const Schema& schema, const ConfigSources& sources = {});

  // Typed access. T is the declared type: std::int64_t (or any integer type the value fits
  // in), double, bool, std::string, std::vector<std::string>, std::vector<double>.
  // Throws ConfigAccessError for a key not in the schema or a different type.
  template <class T>
  T get(std::string_view key) const;

  std::int64_t get_int(std::string_view key) const;
  double get_double(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;
  const std::vector<std::string>& get_string_list(std::string_view key) const;
  const std::vector<double>& get_double_list(std::string_view key) const;

  // Any key; throws ConfigAccessError when not in the schema.
  const Value& value(std::string_view key) const;
  // Where the value of `key` came from: "default", "/path/file.yaml:3", "<yaml>:1", "--set".
  const std::string& origin(std::string_view key) const;

  // The effective configuration as YAML (nested maps, keys sorted), for run directories.
  // Loading it back with the same schema gives the same values.
  std::string dump() const;

  const Schema& schema() const { return *schema_; }

 private:
  struct Slot {
    Value value;
    std::string origin;
  };
  Config(std::shared_ptr<const Schema> schema, std::map<std::string, Slot, std::less<>> values)
      : schema_(std::move(schema)), values_(std::move(values)) {}
  const Slot& slot(std::string_view key) const;
  [[noreturn]] void wrong_type(std::string_view key, std::string_view wanted) const;

  std::shared_ptr<const Schema> schema_;
  std::map<std::string, Slot, std::less<>> values_;
};

template <class T>
T Config::get(std::string_view key) const {
  if constexpr (std::is_same_v<T, bool>) {
    return get_bool(key);
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return get_int(key);
  } else if constexpr (std::is_integral_v<T>) {
    const std::int64_t v = get_int(key);
    if constexpr (std::is_unsigned_v<T>) {
      if (v < 0 || static_cast<std::uint64_t>(v) > std::numeric_limits<T>::max()) {
        wrong_type(key, "an integer in range of the requested type");
      }
    } else {
      if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
        wrong_type(key, "an integer in range of the requested type");
      }
    }
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return get_double(key);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return get_string(key);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    return get_string_list(key);
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    return get_double_list(key);
  } else {
    static_assert(sizeof(T) == 0, "Config::get: unsupported type");
  }
}

}  // namespace spotlight::config
