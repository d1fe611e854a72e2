#pragma once
// One command-line parser for every binary: the services (through parse_command_line() in
// command_line.hpp) and the tools (spotlight-chaos, spotlight-sim, spotlight-node,
// spotlight-keygen).
//
//   ArgumentParser parser("usage: spotlight-sim [options] [TRACE.json ...]");
//   parser.option("seeds", "N", "seeds per configuration", "3").flag("loop", "wrap around");
//   const Arguments a = parser.parse(argc, argv);      // throws ConfigError naming the option
//   if (a.help()) { std::cout << parser.help(); return 0; }
//   const std::int64_t seeds = a.integer("seeds");    // "3" unless --seeds was given
//
// Words: "--name VALUE" or "--name=VALUE" for an option, "--name" for a flag, "-h"/"--help" for
// help; options may appear anywhere; other words are positional; after "--" every word is
// positional and kept apart (rest(): a command line to run). Errors (ConfigError, key empty):
// an undeclared option, an option without its value, a flag with a value, a non-repeatable
// option given twice, a value that is not a number where one is asked for.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace spotlight::config {

class Arguments;

class ArgumentParser {
 public:
  // `usage`: the first lines of help(), e.g. "usage: spotlight-keygen SECRET_FILE PUBLIC_FILE".
  explicit ArgumentParser(std::string usage);

  // --name VALUE; `fallback` is what value() gives when the option is absent (none: nullopt).
  ArgumentParser& option(std::string name, std::string value_name, std::string help,
                         std::optional<std::string> fallback = std::nullopt);
  // --name VALUE, any number of times (values() in order).
  ArgumentParser& repeated(const std::string& name, std::string value_name, std::string help);
  // --name (no value).
  ArgumentParser& flag(std::string name, std::string help);

  Arguments parse(int argc, const char* const* argv) const;      // argv[0] is the program
  Arguments parse(const std::vector<std::string>& words) const;  // without the program

  // The usage, then one line per option with its help and default.
  std::string help() const;

 private:
  friend class Arguments;
  struct Option {
    std::string value_name;  // empty: a flag
    std::string help;
    std::optional<std::string> fallback;
    bool repeatable = false;
  };
  std::string usage_;
  std::vector<std::string> order_;
  std::map<std::string, Option> options_;
};

class Arguments {
 public:
  bool help() const { return help_; }
  const std::vector<std::string>& positional() const { return positional_; }
  const std::vector<std::string>& rest() const { return rest_; }  // after "--"

  bool given(const std::string& name) const;  // on the command line (not a fallback)
  bool flag(const std::string& name) const;
  std::optional<std::string> value(const std::string& name) const;  // given, else the fallback
  std::vector<std::string> values(const std::string& name) const;   // repeated options
  // value() as a number; ConfigError naming the option when it is not one. Throws ConfigError
  // "option --name is required" when there is neither a value nor a fallback.
  std::string text(const std::string& name) const;
  std::int64_t integer(const std::string& name) const;
  double real(const std::string& name) const;

 private:
  friend class ArgumentParser;
  const ArgumentParser::Option& declared(const std::string& name) const;
  std::map<std::string, ArgumentParser::Option> options_;  // the parser's declarations
  bool help_ = false;
  std::vector<std::string> positional_;
  std::vector<std::string> rest_;
  std::map<std::string, std::vector<std::string>> values_;
};

}  // namespace spotlight::config
