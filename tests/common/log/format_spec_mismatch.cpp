// Must not compile: a floating-point spec for a string (log_format_compile_test).
#include "common/log/log.hpp"

int main() {
  spotlight::log::info("{:.3f}", "text");
}
