#pragma once
// Shared by config_test (with yaml-cpp) and config_noyaml_test (the library built without it):
// a schema with every value type and the YAML that the no-yaml build's dump() writes for some
// settings. The first test checks that yaml-cpp reads that text back to the same values, the
// second that dump() writes exactly it: a config.yaml from either build loads in the other.
#include <string>

#include "common/config/schema.hpp"

namespace spotlight::config::test {

inline Schema every_type_schema() {
  return Schema{
      Entry::integer("a.count", 1, "An integer."),
      Entry::real("a.rate", 0.5, "A number."),
      Entry::boolean("a.on", false, "A flag."),
      Entry::string("b.name", "x", "A string."),
      Entry::string_list("b.names", {}, "Strings."),
      Entry::double_list("b.weights", {}, "Numbers."),
      Entry::integer("top", 0, "A top-level key."),
  };
}

// The settings, as --set overrides.
inline std::vector<std::string> every_type_overrides() {
  return {"a.count=-3",
          "a.rate=2.5e-05",
          "a.on=yes",
          R"(b.name=say "hi"\ there: #1)",
          "b.names=[one, 'two, three', \"\"]",
          "b.weights=1,2.5",
          "top=7"};
}

inline const char* every_type_dump() {
  return "a:\n"
         "  count: -3\n"
         "  on: true\n"
         "  rate: 2.5e-05\n"
         "b:\n"
         "  name: \"say \\\"hi\\\"\\\\ there: #1\"\n"
         "  names: [\"one\", \"two, three\", \"\"]\n"
         "  weights: [1.0, 2.5]\n"
         "top: 7\n";
}

}  // namespace spotlight::config::test
