// Must not compile: one "{}" for two arguments (log_format_compile_test checks the diagnostic).
#include "common/log/log.hpp"

int main() {
  spotlight::log::info("only {}", 1, 2);
}
